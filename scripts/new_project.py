"""`python scripts/new_project.py ../my-exp my_exp` (or `make new-project DEST=../my-exp NAME=my_exp`).

Copies this repository into a new folder with the package renamed, a README of its own and a fresh git
repository. Only the standard library and git: it runs before any install.

What is copied is what git would commit here (`git ls-files`: tracked files and new ones that are not ignored),
so runs/, .venv/ and caches stay behind. `project` is renamed where it names the package (`import project`,
`python -m project`, `project.networks.MLP`, `project/`, "project" in pyproject.toml), never in prose.
The copy records where it came from, for `make update-template` (scripts/update_template.py, docs/updating.md).
"""

import argparse
import json
import keyword
import re
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = "project"  # this package's name, as it appears in code, configs and docs
TEMPLATE = Path(__file__).resolve().parents[1]
# Written into each copy and never copied from one (a copy of a copy records its own origin): the template's
# location, the template commit the copy matches, and both package names, for `make update-template`.
RECORD = ".template.json"
# Ends the message of each commit that is the renamed template itself: a copy's first commit and the template's
# side of each update. The next update merges onto the newest one, so git knows what came from the template.
TRAILER = "Template-commit:"


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


def check_name(name: str) -> None:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name) or keyword.iskeyword(name):
        raise ValueError(f"{name!r} is not a package name: use lower-case letters, digits and _ (my_exp)")
    if name == PACKAGE:
        raise ValueError(f"{name!r} is this template's own name; choose another")


def files_to_copy(source: Path) -> list[Path]:
    """Tracked files and new, not ignored ones, relative to `source`; those deleted but not yet committed skipped."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=source,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [Path(name) for name in listed.split("\0") if name and name != RECORD and (source / name).is_file()]


def rename(text: str, name: str, package: str = PACKAGE) -> str:
    return code_name(package).sub(name, text)


def new_readme(text: str, name: str) -> str:
    """The first line becomes the new project's title; the rest stays as the documentation it starts from."""
    _, _, rest = text.partition("\n")
    return f"# {name}\n\nStarted from the PyTorch Lightning project template.\n{rest}"


def render(source: Path, dest: Path, name: str, package: str = PACKAGE) -> None:
    """The files of `source` written into `dest` with the package `package` renamed `name`, as a copy has them."""
    for relative in files_to_copy(source):
        parts = relative.parts
        target = dest.joinpath(name if parts[0] == package else parts[0], *parts[1:])
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / relative, target)  # keeps the executable bit of .ci/run
        try:
            text = target.read_text()
        except UnicodeDecodeError:
            continue  # binary: nothing to rename
        text = new_readme(text, name) if relative == Path("README.md") else text
        target.write_text(rename(text, name, package))


def write_record(dest: Path, template: str, commit: str, package: str, name: str) -> None:
    record = {"template": template, "commit": commit, "template_package": package, "package": name}
    (dest / RECORD).write_text(json.dumps(record, indent=2) + "\n")


def head_commit(repository: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repository, capture_output=True, text=True, check=True
    ).stdout.strip()


def create(dest: Path, name: str, source: Path = TEMPLATE) -> Path:
    check_name(name)
    dest, source = Path(dest), Path(source).resolve()
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"{dest} exists and is not empty")
    commit = head_commit(source)  # uncommitted changes here are copied too, as part of the template
    render(source, dest, name)
    write_record(dest, str(source), commit, PACKAGE, name)
    _init_git(dest, name, commit)
    return dest


def _init_git(dest: Path, name: str, commit: str) -> None:
    subprocess.run(["git", "init", "--quiet", str(dest)], check=True)
    subprocess.run(["git", "add", "--all"], cwd=dest, check=True)
    message = [f"Start {name} from the PyTorch Lightning project template", f"{TRAILER} {commit}"]
    result = subprocess.run(
        ["git", "commit", "--quiet", "-m", message[0], "-m", message[1]], cwd=dest, capture_output=True, text=True
    )
    if result.returncode != 0:  # most often: no user.name/user.email configured yet
        print(f"Files are staged but not committed ({result.stderr.strip()}); commit them yourself, keeping the")
        print(f"line that `make update-template` looks for: git commit -m '{message[0]}' -m '{message[1]}'")


def main(args: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="the new project's folder, e.g. ../my-exp")
    parser.add_argument("name", help="its Python package, e.g. my_exp (then: python -m my_exp fit ...)")
    options = parser.parse_args(args)
    try:
        dest = create(options.dest, options.name)
    except (ValueError, subprocess.CalledProcessError) as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    print(f"Created {dest} with package {options.name}. Next: cd {dest} && make test")


if __name__ == "__main__":
    main()
