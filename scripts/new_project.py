"""`python scripts/new_project.py ../my-exp my_exp` (or `make new-project DEST=../my-exp NAME=my_exp`).

Writes the owner's side of this template into a new folder, with the package renamed, a README of its own and a
fresh git repository; the machinery is not copied but depended on: the copy's pyproject.toml names the library in
lightning-runs/ at this template's commit, which its `make install` takes from here (or from this clone's remote,
where the remote has the commit). Only the standard library and git: it runs before any install.

What is copied is what the template committed (its HEAD), never a file of this working tree that is not committed
(a scratch config, a data file): those are listed as left behind. `project` is renamed where it names the package
(`import project`, `python -m project`, `project.networks.MLP`, `project/`, "project" in pyproject.toml), never in
prose. The copy records where it came from, for `make update-template` (the template's scripts/update_template.py,
docs/updating.md), which renders the template's later commits with their own rules.
"""

import argparse
import importlib.util
import json
import keyword
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the dependencies' names go unchecked, the rest still is
    tomllib = None

PACKAGE = "project"  # this package's name, as it appears in code, configs and docs
TEMPLATE = Path(__file__).resolve().parents[1]
# Written into each copy and never copied from one (a copy of a copy records its own origin): the template's
# location, the template commit the copy matches, and both package names, for `make update-template`.
RECORD = ".template.json"
# Ends the message of each commit that is the renamed template itself: a copy's first commit and the template's
# side of each update. The next update merges onto the newest one, so git knows what came from the template.
TRAILER = "Template-commit:"
# What a copy holds (the owner's side: docs/updating.md), as paths or folders of the template. Everything else stays
# here: the library (lightning-runs/, installed by version instead), benchmarks, the template's docs and its own
# tests (tests/template/), template.mk (the template's own make targets).
COPIED = ("pyproject.toml", "uv.lock", ".python-version", "Makefile", ".gitignore", ".pre-commit-config.yaml", ".ci/",
          ".github/", "Dockerfile", ".dockerignore", ".devcontainer/",
          f"{PACKAGE}/", "configs/", "sweeps/", "notebooks/", "tests/", "scripts/")  # fmt: skip
# The image-folder DataModule (images on disk, decoded by DataLoader workers) and what is only about it: a copy holds
# them when asked (make new-project IMAGES=1, copier's `images`), else its package is the digits' alone. The choice is
# in the copy's RECORD, so that `make update-template` renders the template as the copy has it.
IMAGES = (f"{PACKAGE}/images.py", f"{PACKAGE}/image_files.py", "tests/test_images.py")
# The template's own tooling: a copy's `make update-template` runs the template's newest update_template.py.
LEFT_OUT = ("tests/template/", "scripts/copy-README.md", "scripts/copy-docs/", "scripts/copier_task.py",
            "scripts/copier_checks.py", "scripts/new_project.py", "scripts/update_template.py",
            "scripts/licenses/")  # fmt: skip
# A copy's LICENSE is its owner's, written from scripts/licenses/<SPDX id> with the year and the copyright holder, in
# a commit after the template's: the template's side of an update never holds it, so an update never touches it.
LICENSES = TEMPLATE / "scripts/licenses"
LICENSE = "MIT"  # the template's own (LICENSE, pyproject.toml), and a copy's unless it asks for another
README = "scripts/copy-README.md"  # the copy's README.md, with <name> and <template> filled in
DOCS_SITE = "scripts/copy-docs"  # the copy's mkdocs.yml and docs/ (its own pages, its package's API), filled in too
LOCK = "uv.lock"  # the versions every copy installs: the template's, with the library from its git repository
LIBRARY = "lightning-runs"  # the library's distribution, and its folder in this repository
# Where uv takes the library, in the template's pyproject.toml ([tool.uv.sources]): the folder beside; a copy's line
# names the template's git repository at a commit instead.
LIBRARY_LINE = re.compile(rf"^{LIBRARY} = \{{ path = .*$", flags=re.MULTILINE)


def code_name(package: str) -> re.Pattern[str]:
    """Where the package name is code, not an English word: each pattern matches only the name itself."""
    return re.compile(
        rf"(?<=-m ){package}\b"  # python -m project
        rf"|(?<=from ){package}\b|(?<=import ){package}\b"  # from project.cli import ...
        rf"|(?<![\w.\[/-]){package}(?=\.[A-Za-z_])"  # project.networks.MLP, not [project.optional-dependencies]
        rf"|(?<![\w./-]){package}(?=/)"  # project/ (a path), not pypi.org/project/
        rf"|(?<=[\"']){package}(?=[\"'\[*])"  # "project", "project[dev]", "project*"
    )


CODE_NAME = code_name(PACKAGE)


# Import names that differ from their distribution's, for the packages a copy depends on; and what every project
# imports through them (torch needs numpy, jsonargparse yaml).
IMPORT_NAMES = {"scikit-learn": "sklearn", "pyyaml": "yaml"}
ALSO_IMPORTED = ("numpy", "yaml")
# While a copy is written, its DEST holds this file alone: a second `make new-project` into it is refused.
CLAIM = ".new-project-claim"


def holder_of(name: str) -> str:
    return f"The {name} authors"


def check_license(spdx: str, holder: str) -> None:
    offered = sorted(path.name for path in LICENSES.iterdir())
    if spdx not in offered:
        raise ValueError(f"{spdx!r} is not a license a copy can take: give one of {', '.join(offered)}")
    if not holder.strip() or "\n" in holder:
        raise ValueError(f"{holder!r} is not a copyright holder: give a name on one line (HOLDER='Jane Doe')")


def write_license(copy: Path, spdx: str, holder: str, year: int) -> None:
    """The copy's LICENSE, and its pyproject.toml's `license` field, for the license `spdx` held by `holder`."""
    text = (LICENSES / spdx).read_text().replace("{year}", str(year)).replace("{holder}", holder)
    (copy / "LICENSE").write_text(text)
    pyproject = copy / "pyproject.toml"
    written, found = re.subn(r'^license = "[^"]*"', f'license = "{spdx}"', pyproject.read_text(), flags=re.M)
    if found != 1:
        raise ValueError('pyproject.toml has no line license = "...", to set the copy\'s license in')
    pyproject.write_text(written)


def check_name(name: str, template: Path = TEMPLATE) -> None:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name) or keyword.iskeyword(name):
        raise ValueError(f"{name!r} is not a package name: use lower-case letters, digits and _ (my_exp)")
    if name == PACKAGE:
        raise ValueError(f"{name!r} is this template's own name; choose another")
    ignored = ["git", "check-ignore", "-q", "--no-index", f"{name}/"]  # as the copy's git would (its .gitignore)
    if subprocess.run(ignored, cwd=template, capture_output=True).returncode == 0:
        raise ValueError(f"{name!r} is a folder .gitignore ignores (runs/, lightning_logs/): none of the package would"
                         " be committed; choose another")  # fmt: skip
    if name in shadowed(template):
        raise ValueError(
            f"{name!r} would shadow the package or folder of that name (the copy's `import {name}` would find its own"
            " package instead); choose another, such as my_" + name
        )


def shadowed(template: Path = TEMPLATE) -> set[str]:
    """Names a copy's package may not take: the standard library's, the packages the copy depends on (its
    pyproject.toml, wherever they are installed), any installed here, and the copy's own top-level folders."""
    project = tomllib.loads((template / "pyproject.toml").read_text())["project"] if tomllib else {"dependencies": []}
    listed = [*project["dependencies"], *(d for ds in project.get("optional-dependencies", {}).values() for d in ds)]
    names = {re.match(r"[A-Za-z0-9_.-]+", d)[0].lower() for d in listed}
    dependencies = {IMPORT_NAMES.get(n, n.replace("-", "_").replace(".", "_")) for n in names}
    folders = {path.rstrip("/").split("/")[0].lstrip(".") for path in COPIED if path.endswith("/")}
    installed = {name for name in dependencies | folders if importlib.util.find_spec(name) is not None}
    return set(sys.stdlib_module_names) | dependencies | set(ALSO_IMPORTED) | folders | installed


def claim(dest: Path) -> None:
    """DEST for this copy alone: a folder that is new or empty, taken by creating CLAIM in it exclusively."""
    if dest.exists() and not dest.is_dir():
        raise ValueError(f"{dest} is a file; give a folder that does not exist yet, or an empty one")
    if dest.is_symlink():  # and leads nowhere (is_dir follows it)
        raise ValueError(f"{dest} is a link to {os.readlink(dest)}, which does not exist; give a folder")
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a parent that is a file, a folder without write permission
        raise ValueError(f"cannot make {dest}: {error.strerror} ({error.filename})") from None
    try:
        os.close(os.open(dest / CLAIM, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        raise ValueError(f"{dest} is being made by another `make new-project`; choose another DEST") from None
    if any(path.name != CLAIM for path in dest.iterdir()):
        (dest / CLAIM).unlink()
        raise ValueError(f"{dest} exists and is not empty")


def committed(repository: Path, images: bool = True) -> list[Path]:
    """The files of `repository`'s HEAD that a copy holds, relative to it; without `images`, none of IMAGES."""
    listed = git("ls-tree", "-r", "--name-only", "-z", "HEAD", cwd=repository)
    left_out = LEFT_OUT if images else (*LEFT_OUT, *IMAGES)
    names = [name for name in listed.split("\0") if name and name != RECORD]
    return [Path(name) for name in names if name.startswith(COPIED) and not name.startswith(left_out)]


def left_behind(repository: Path) -> list[str]:
    """Files of the working tree that differ from its HEAD (new, changed or deleted), which a copy does not get."""
    status = git("status", "--porcelain", "--untracked-files=all", "-z", cwd=repository)
    return sorted(entry[3:] for entry in status.split("\0") if len(entry) > 3 and entry[3:] != RECORD)


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def library_location(template: str, commit: str) -> tuple[str, str]:
    """Where a copy's pip takes the library from, and a line that says which: the URL of a remote of the template
    that has `commit` (known from its remote-tracking branches, offline), as it works on any machine that reaches
    the remote; else the template itself, a local path on this machine."""
    if not Path(template).is_dir():
        return template, f"The library comes from {template} at {commit[:12]}."
    folder = Path(template)
    try:
        refs = git("branch", "--remotes", "--contains", commit, "--format=%(refname)", cwd=folder).split()
        remotes = sorted(git("remote", cwd=folder).split(), key=lambda name: name != "origin")  # origin first
        remote = next(name for name in remotes if any(ref.startswith(f"refs/remotes/{name}/") for ref in refs))
        url = git("remote", "get-url", remote, cwd=folder).strip()
    except (subprocess.CalledProcessError, StopIteration):  # not a repository, or no remote has the commit
        return template, (
            f"The library comes from the local path {template}: no remote of it has commit {commit[:12]}"
            " (push it first to pin the remote's URL instead)."
        )
    if "://" not in url and ":" not in url.split("/")[0]:  # a path, as `git clone ../template` records it
        url = str((folder / url).resolve())
    return url, f"The library comes from {remote}, {url}, which has commit {commit[:12]}."


def library_url(template: str, commit: str) -> str:
    """The template's git repository as uv fetches it, a URL (never a bare path): where a copy's library comes from."""
    location = library_location(template, commit)[0]
    if "://" not in location and Path(location).is_absolute():
        return f"file://{location}"
    if re.match(r"^[\w.-]+@[\w.-]+:", location):  # git@host:owner/repo.git, as git writes it
        return "ssh://" + location.replace(":", "/", 1)
    return location.removeprefix("git+")


def library_source(template: str, commit: str) -> str:
    """The copy's [tool.uv.sources] line: the library from the template's git repository at `commit`."""
    url = library_url(template, commit)
    return f'{LIBRARY} = {{ git = "{url}", subdirectory = "{LIBRARY}", rev = "{commit}" }}'


def for_copy(relative: Path, text: str, template: str, commit: str) -> str:
    """A copy's pyproject.toml: the library from the template at `commit`, and the copy's own tests only. Its uv.lock:
    the template's pins, the library's source moved the same way (rename() then names the copy's own package). uv
    accepts it as its own (`uv lock --check`); writing it needs neither uv nor the index `uv lock` would ask."""
    if relative == Path(LOCK):
        url, folder = (
            f"{library_url(template, commit)}?subdirectory={LIBRARY}&rev={commit}",
            f'editable = "{LIBRARY}" }}',
        )
        if text.count(f"source = {{ {folder}") != 1:
            raise ValueError(f"{LOCK} has no package {LIBRARY} from its folder, for the copy to pin")
        text = text.replace(f"source = {{ {folder}", f'source = {{ git = "{url}#{commit}" }}')  # the library itself
        return text.replace(folder, f'git = "{url}" }}')  # and where the project's requirements name it
    if relative != Path("pyproject.toml"):
        return text
    source = library_source(template, commit)
    text, found = LIBRARY_LINE.subn(lambda _: f"{source}  # the template's: make update-template moves it", text)
    if found != 1:
        raise ValueError(f"pyproject.toml has no line {LIBRARY} = {{ path = ... }} in [tool.uv.sources], to pin")
    text = re.sub(r"^extra-paths = .*\n", "", text, flags=re.MULTILINE)  # ty: the library's folder is not in a copy
    return re.sub(r"^testpaths = .*$", 'testpaths = ["tests"]', text, flags=re.MULTILINE)


# A mention of the template's docs (docs/results.md, in a comment or a message): a copy has no docs/ folder, so it
# reads "the template's docs/results.md", which its README says where to find.
DOCS = re.compile(r"(?<![\w./-])(?<!template's )docs/(?=[\w-]+\.md)")


def rename(text: str, name: str, package: str = PACKAGE) -> str:
    return DOCS.sub("the template's docs/", code_name(package).sub(name, text))


def readme(source: Path, name: str, template: str, images: bool) -> str:
    """The copy's README.md: scripts/copy-README.md filled in, its lines marked <images> kept only in a copy with
    the image-folder DataModule and those marked <no-images> only in one without (the marks removed)."""
    text = (source / README).read_text() if (source / README).is_file() else "# <name>\n"
    dropped = "<no-images>" if images else "<images>"
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith(dropped)]
    kept = "".join(line.removeprefix("<images>").removeprefix("<no-images>") for line in lines)
    return kept.replace("<name>", name).replace("<template>", template)


def render(source: Path, dest: Path, name: str, package: str, template: str, commit: str, images: bool = False) -> None:
    """What a copy holds of the repository `source` (at its HEAD), written into `dest` with the package `package`
    renamed `name` and the library pinned to the template `template` at `commit`; the image-folder DataModule
    (IMAGES) only with `images`."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "README.md").write_text(readme(source, name, template, images))
    write_docs_site(source, dest, name, template)
    for relative in committed(source, images):
        parts = relative.parts
        target = dest.joinpath(name if parts[0] == package else parts[0], *parts[1:])
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / relative, target)  # keeps the executable bit of .ci/run
        try:
            text = target.read_text()
        except UnicodeDecodeError:
            continue  # binary: nothing to rename
        target.write_text(rename(for_copy(relative, text, template, commit), name, package))


def write_docs_site(source: Path, dest: Path, name: str, template: str) -> None:
    """The copy's own mkdocs.yml and docs/ (the template's pages are the template's), with its names filled in."""
    for page in sorted(path for path in (source / DOCS_SITE).rglob("*") if path.is_file()):
        target = dest / page.relative_to(source / DOCS_SITE)
        target.parent.mkdir(parents=True, exist_ok=True)
        filled = page.read_text().replace("<name>", name).replace("<template>", template)
        target.write_text(filled.replace("<package>", name))


def write_record(dest: Path, template: str, commit: str, package: str, name: str, images: bool = False) -> None:
    record = {"template": template, "commit": commit, "template_package": package, "package": name, "images": images}
    (dest / RECORD).write_text(json.dumps(record, indent=2) + "\n")


def head_commit(repository: Path) -> str:
    return git("rev-parse", "HEAD", cwd=repository).strip()


def create(
    dest: Path,
    name: str,
    source: Path = TEMPLATE,
    license: str = LICENSE,
    holder: str | None = None,
    images: bool = False,
) -> tuple[Path, list[str]]:
    """The copy, and the files of this working tree it did not get because they are not committed."""
    check_name(name)
    holder = holder_of(name) if holder is None else holder
    check_license(license, holder)
    dest, source = Path(dest), Path(source).resolve()
    claim(dest)
    try:
        commit = head_commit(source)
        with tempfile.TemporaryDirectory(prefix="new-project-") as tmp:
            clone = Path(tmp) / "template"  # HEAD as committed: nothing of this working tree that is not
            git("clone", "--quiet", "--no-hardlinks", str(source), str(clone), cwd=Path(tmp))
            render(clone, dest, name, PACKAGE, str(source), commit, images)
        write_record(dest, str(source), commit, PACKAGE, name, images)
    finally:
        (dest / CLAIM).unlink()  # the copy's own files hold DEST from here on: a second copy finds it not empty
    if _init_git(dest, name, commit):
        write_license(dest, license, holder, time.gmtime().tm_year)
        _commit(dest, [f"License {name}: {license}, copyright {holder}"])
    else:  # the owner commits the template's files first, then the license (see what _init_git printed)
        write_license(dest, license, holder, time.gmtime().tm_year)
    return dest, left_behind(source)


def _commit(dest: Path, message: list[str]) -> subprocess.CompletedProcess:
    subprocess.run(["git", "add", "--all"], cwd=dest, check=True)
    said = [part for line in message for part in ("-m", line)]
    return subprocess.run(["git", "commit", "--quiet", *said], cwd=dest, capture_output=True, text=True)


def _init_git(dest: Path, name: str, commit: str) -> bool:
    subprocess.run(["git", "init", "--quiet", str(dest)], check=True)
    message = [f"Start {name} from the PyTorch Lightning project template", f"{TRAILER} {commit}"]
    result = _commit(dest, message)
    if result.returncode != 0:  # most often: no user.name/user.email configured yet
        print(f"Files are staged but not committed ({result.stderr.strip()}); commit them yourself, keeping the")
        print(f"line that `make update-template` looks for: git commit -m '{message[0]}' -m '{message[1]}'")
        print("and LICENSE (unstaged, with pyproject.toml's license line) in a commit of its own after it")
    return result.returncode == 0


def main(args: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="the new project's folder, e.g. ../my-exp")
    parser.add_argument("name", help="its Python package, e.g. my_exp (then: python -m my_exp fit ...)")
    parser.add_argument("--license", default=LICENSE, help=f"its license, an SPDX id of scripts/licenses/ ({LICENSE})")
    parser.add_argument("--holder", help="its copyright holder (default: The <name> authors)")
    parser.add_argument("--images", action="store_true", help="keep the image-folder DataModule (images.py)")
    options = parser.parse_args(args)
    try:
        dest, behind = create(
            options.dest, options.name, license=options.license, holder=options.holder, images=options.images
        )
    except (ValueError, subprocess.CalledProcessError) as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    if behind:
        listed = ", ".join(behind[:10]) + (f" and {len(behind) - 10} more" if len(behind) > 10 else "")
        print(f"Left behind, as not committed in the template: {listed} (commit them first to copy them)")
    print(library_location(str(TEMPLATE), head_commit(TEMPLATE))[1])
    print(f"Created {dest} with package {options.name}. Next: cd {dest} && make test")


if __name__ == "__main__":
    main()
