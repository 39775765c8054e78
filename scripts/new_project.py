"""`python scripts/new_project.py ../my-exp my_exp` (or `make new-project DEST=../my-exp NAME=my_exp`).

Copies this repository into a new folder with the package renamed, a README of its own and a fresh git
repository. Only the standard library and git: it runs before any install.

What is copied is what git would commit here (`git ls-files`: tracked files and new ones that are not ignored),
so runs/, .venv/ and caches stay behind. `project` is renamed where it names the package (`import project`,
`python -m project`, `project.networks.MLP`, `project/`, "project" in pyproject.toml), never in prose.
"""

import argparse
import keyword
import re
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = "project"  # this package's name, as it appears in code, configs and docs
TEMPLATE = Path(__file__).resolve().parents[1]
# Where the package name is code, not an English word: each pattern matches only the name itself.
CODE_NAME = re.compile(
    rf"(?<=-m ){PACKAGE}\b"  # python -m project
    rf"|(?<=from ){PACKAGE}\b|(?<=import ){PACKAGE}\b"  # from project.cli import ...
    rf"|(?<![\w.\[/-]){PACKAGE}(?=\.[A-Za-z_])"  # project.networks.MLP, not [project.optional-dependencies]
    rf"|(?<![\w./-]){PACKAGE}(?=/)"  # project/ (a path), not pypi.org/project/
    rf"|(?<=[\"']){PACKAGE}(?=[\"'\[*])"  # "project", "project[dev]", "project*"
)


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
    return [Path(name) for name in listed.split("\0") if name and (source / name).is_file()]


def rename(text: str, name: str) -> str:
    return CODE_NAME.sub(name, text)


def new_readme(text: str, name: str) -> str:
    """The first line becomes the new project's title; the rest stays as the documentation it starts from."""
    _, _, rest = text.partition("\n")
    return f"# {name}\n\nStarted from the PyTorch Lightning project template.\n{rest}"


def create(dest: Path, name: str, source: Path = TEMPLATE) -> Path:
    check_name(name)
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"{dest} exists and is not empty")
    for relative in files_to_copy(source):
        parts = relative.parts
        target = dest.joinpath(name if parts[0] == PACKAGE else parts[0], *parts[1:])
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / relative, target)  # keeps the executable bit of .ci/run
        try:
            text = target.read_text()
        except UnicodeDecodeError:
            continue  # binary: nothing to rename
        text = new_readme(text, name) if relative == Path("README.md") else text
        target.write_text(rename(text, name))
    _init_git(dest, name)
    return dest


def _init_git(dest: Path, name: str) -> None:
    subprocess.run(["git", "init", "--quiet", str(dest)], check=True)
    subprocess.run(["git", "add", "--all"], cwd=dest, check=True)
    commit = subprocess.run(
        ["git", "commit", "--quiet", "-m", f"Start {name} from the PyTorch Lightning project template"],
        cwd=dest,
        capture_output=True,
        text=True,
    )
    if commit.returncode != 0:  # most often: no user.name/user.email configured yet
        print(f"Files are staged but not committed ({commit.stderr.strip()}); commit them yourself.")


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
