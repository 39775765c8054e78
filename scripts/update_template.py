"""`make update-template [TEMPLATE=<path or git URL>]` in a copy, which clones the template and runs this script of
its newest commit (`python3 <clone>/scripts/update_template.py --clone <clone> [--template ...]`): a copy holds none
of the template's tooling.

Brings what changed in the template since this copy was made (or last updated) into the copy, as a git merge.
The template's HEAD is rendered as `make new-project` renders a copy, with the rules of that HEAD's own
scripts/new_project.py (so a template that changes what a copy holds changes it in the update too), and committed as
the template's side, on top of the copy's last commit of the template (the one whose message ends
`Template-commit: <the recorded commit>`); then `git merge` of that commit is git's three-way merge: your edits
stay, the template's arrive, conflicts stop with markers. The library is not merged: the copy's pyproject.toml
names it at the template's new commit, its uv.lock is the template's relocked for the copy (uv lock, again after the
merge where the copy's own dependencies need it), and the next `make` installs it. The standard library, git and uv.

It works on the git repository of the current directory, so a copy made before its Makefile cloned the template
runs the template's script itself: `python3 <template>/scripts/update_template.py` (docs/updating.md).
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from new_project import LOCK, RECORD, TRAILER

COPY = Path.cwd()  # make update-template runs here in the copy's top folder; read_copy() checks that it is one


class Conflict(Exception):
    """Both sides changed the same lines: the merge stays in progress for the user to finish or abandon. Exit 1."""

    def __init__(self, files: list[str]) -> None:
        listed = "".join(f"\n  {name}" for name in files)
        super().__init__(
            f"The template's changes and yours meet in {len(files)} file(s); git marked each place,"
            f" <<<<<<< HEAD (yours) ======= (the template's) >>>>>>>, in:{listed}\n"
            "Finish: edit each file to what it should be, then `git add <file>...` and `git commit`.\n"
            "Abandon: `git merge --abort` puts the copy back as it was."
        )


def git(*args: str, cwd: Path = COPY, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise subprocess.CalledProcessError(result.returncode, ["git", *args], result.stdout, result.stderr)
    return result.stdout.strip()


def succeeds(*args: str, cwd: Path = COPY) -> bool:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True).returncode == 0


def last_line(error: subprocess.CalledProcessError) -> str:
    lines = (error.stderr or error.stdout or "").strip().splitlines()
    return lines[-1] if lines else f"exit code {error.returncode}"


def update(template: str | None = None, cloned: Path | None = None) -> str:
    """Merges the template's HEAD into the copy as one commit; returns what to tell the user. `cloned`: a clone of
    the template made already (the Makefile's, which runs this script from it), else one is made here."""
    record = read_copy()
    if template is None:
        template = record["template"]
    elif Path(template).exists():  # a path, not a URL: recorded so that it works from any folder
        template = str(Path(template).resolve())
    old = record["commit"]
    with tempfile.TemporaryDirectory(prefix="update-template-") as tmp:
        clone = cloned or Path(tmp) / "template"
        try:
            if cloned is None:
                git("clone", "--quiet", template, str(clone), cwd=Path(tmp))
        except subprocess.CalledProcessError as error:
            raise ValueError(f"{template} is not a git repository that can be cloned ({last_line(error)})") from None
        new = git("rev-parse", "HEAD", cwd=clone)
        if new == old and not rechosen(old, record["images"]):
            return f"Already up to date: the template at {template} is still at {old[:12]}. Nothing changed."
        if not succeeds("merge-base", "--is-ancestor", old, "HEAD", cwd=clone):
            raise ValueError(
                f"the template at {template} no longer has commit {old[:12]}, which this copy was made from or last "
                "updated to: its history was rewritten, or it is another repository"
            )
        base = last_template_commit(old)
        theirs, unlocked = commit_template(clone, Path(tmp), {**record, "template": template, "commit": new}, base)
    said = merge(theirs, f"Update from the template at {template}: {old[:12]}..{new[:12]}") + settle_lock(unlocked)
    library = library_commit()
    return said + (f"\nThe library is now the template's {library[:12]}: the next make installs it." if library else "")


def rechosen(commit: str, images: bool) -> bool:
    """Whether the copy's record asks for the image-folder DataModule otherwise than the template's side it last
    took: the owner changed "images" in it, and the update brings (or takes away) the files at the same commit."""
    try:
        taken = json.loads(git("show", f"{last_template_commit(commit)}:{RECORD}"))
    except (ValueError, subprocess.CalledProcessError):  # no such commit: the update says what it finds
        return False
    return taken.get("images", True) != images


def library_commit() -> str | None:
    """The library's commit in the copy's pyproject.toml ([tool.uv.sources]), if the merge moved it."""
    changed = git("diff", "HEAD^1", "HEAD", "--", "pyproject.toml").splitlines()
    added = (line for line in changed if line.startswith("+lightning-runs = {") and ' rev = "' in line)
    return next((line.split(' rev = "')[1].split('"')[0] for line in added), None)


def settle_lock(unlocked: str | None) -> str:
    """The merged uv.lock, relocked where the copy's own dependencies (its pyproject.toml, its lock) need it and
    folded into the update's commit; what to tell the user. Without uv, the copy's make install says what is due."""
    uv = os.environ.get("UV") or shutil.which("uv")  # the Makefile exports the uv it installed
    if unlocked or uv is None or not (COPY / LOCK).is_file():
        return f"\n{unlocked}" if unlocked else ""
    if subprocess.run([uv, "lock", "--check", "--quiet"], cwd=COPY, capture_output=True).returncode == 0:
        return ""
    relocked = subprocess.run([uv, "lock", "--quiet"], cwd=COPY, capture_output=True, text=True)
    if relocked.returncode != 0:
        said = (relocked.stderr.strip().splitlines() or ["uv lock failed"])[0]
        return f"\n{LOCK} does not match the merged pyproject.toml ({said}): run `make lock`, then commit {LOCK}"
    git("commit", "--quiet", "--amend", "--no-edit", "--", LOCK)
    return f"\n{LOCK} relocked for this copy's own dependencies beside the template's pins (uv lock, same commit)."


def read_copy() -> dict:
    """The record of a copy that is ready to update: a git repository of its own with nothing uncommitted."""
    if not succeeds("rev-parse", "--show-toplevel") or Path(git("rev-parse", "--show-toplevel")) != COPY.resolve():
        raise ValueError(f"{COPY} is not the top folder of a git repository: the update is a merge into its history")
    if not (COPY / RECORD).is_file():
        raise ValueError(f"{COPY} has no {RECORD}: it was not made by `make new-project` (see docs/updating.md)")
    if git("status", "--porcelain", "--untracked-files=no"):
        raise ValueError("this copy has uncommitted changes (git status): commit or stash them, then update")
    if not succeeds("var", "GIT_COMMITTER_IDENT"):
        raise ValueError("git needs your name and email for the update's commit: git config --global user.name ...")
    try:
        record = json.loads((COPY / RECORD).read_text())
        kept = {key: str(record[key]) for key in ("template", "commit", "template_package", "package")}
        # Whether the copy holds the image-folder DataModule (make new-project IMAGES=1); copies made before the
        # choice existed hold it.
        images = record.get("images", True)
        if not isinstance(images, bool):
            raise TypeError(f"images is {images!r}, not true or false")
        return {**kept, "images": images}
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{RECORD} is not as `make new-project` writes it ({error!r})") from None


def last_template_commit(commit: str) -> str:
    """The copy's commit of the template at `commit`: the base of the three-way merge."""
    found = git("log", "--format=%H", "--fixed-strings", f"--grep={TRAILER} {commit}", "HEAD")
    if not found:
        raise ValueError(
            f"no commit in this copy's history ends with '{TRAILER} {commit}', the template as this copy last took "
            "it: was the history rewritten (rebase, squash)? See docs/updating.md"
        )
    return found.splitlines()[0]


def rules(clone: Path):
    """The template's own scripts/new_project.py, as of the commit being merged: what a copy holds now."""
    spec = importlib.util.spec_from_file_location("template_new_project", clone / "scripts" / "new_project.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def commit_template(clone: Path, tmp: Path, record: dict, parent: str) -> tuple[str, str | None]:
    """The template's HEAD rendered as the copy has it, committed on top of `parent` without touching the copy's
    files or branch: the template's side of the merge, and render's line on its lock (None: relocked)."""
    rendered, new_project = tmp / "rendered", rules(clone)
    package, template, commit = record["template_package"], record["template"], record["commit"]
    unlocked = new_project.render(clone, rendered, record["package"], package, template, commit, record["images"])
    new_project.write_record(rendered, template, commit, package, record["package"], record["images"])
    # A separate index and work tree: the copy's own index, files and ignore rules stay out of it.
    git_dir = git("rev-parse", "--absolute-git-dir")
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp / "index")}
    git(f"--git-dir={git_dir}", f"--work-tree={rendered}", "add", "--all", "--force", cwd=rendered, env=env)
    tree = git(f"--git-dir={git_dir}", "write-tree", cwd=rendered, env=env)
    message = ["-m", f"The template at {record['commit'][:12]}", "-m", f"{TRAILER} {record['commit']}"]
    return git("commit-tree", tree, "-p", parent, *message), unlocked


def merge(theirs: str, message: str) -> str:
    command = ["git", "merge", "--no-ff", "--no-edit", "-m", message, theirs]
    merged = subprocess.run(command, cwd=COPY, capture_output=True, text=True)
    if merged.returncode != 0:
        if not succeeds("rev-parse", "--quiet", "--verify", "MERGE_HEAD"):  # refused before it began, changed nothing
            said = " ".join(line.strip() for line in (merged.stderr or merged.stdout).splitlines())
            raise ValueError(f"git merge did not start, nothing changed: {said}")
        kept = keep_what_only_the_template_deleted()
        if LOCK in git("diff", "--name-only", "--diff-filter=U").splitlines():  # machine-written: never hand-merged
            git("checkout", "--theirs", "--", LOCK)  # the template's pins; settle_lock adds the copy's own back
            git("add", "--", LOCK)
        unmerged = git("diff", "--name-only", "--diff-filter=U").splitlines()
        if unmerged:
            raise Conflict(unmerged)
        git("commit", "--no-edit")
    else:
        kept = []
    summary = git("diff", "--shortstat", "HEAD^1", "HEAD")
    notes = "".join(f"\nKept {name}: the template deleted it, and this copy had changed it." for name in kept)
    return f"{message}, one commit ({summary or 'no file changed'}; git show --stat HEAD lists them).{notes}"


def keep_what_only_the_template_deleted() -> list[str]:
    """Files the template deleted and the copy changed stay as the copy has them (git calls it a modify/delete
    conflict and leaves the copy's version in place): `git add` settles that."""
    stages: dict[str, set[str]] = {}
    for entry in git("ls-files", "--unmerged", "-z").split("\0"):
        if entry:
            info, name = entry.split("\t", 1)
            stages.setdefault(name, set()).add(info.split()[2])  # 1 the base, 2 the copy, 3 the template
    kept = sorted(name for name, present in stages.items() if present == {"1", "2"})
    if kept:
        git("add", "--", *kept)
    return kept


def main(args: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", help=f"the template's path or git URL (default: the one in {RECORD})")
    parser.add_argument("--clone", type=Path, help="a clone of the template's newest commit to render (default: one)")
    options = parser.parse_args(args)
    try:
        print(update(options.template, options.clone))
    except Conflict as conflict:
        print(conflict, file=sys.stderr)
        sys.exit(1)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    except subprocess.CalledProcessError as error:
        print(f"error: {' '.join(error.cmd[:2])} failed: {last_line(error)}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
