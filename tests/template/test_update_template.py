"""`make update-template` in a copy: the template's later changes arrive as one merge, its library as a new version,
and the copy's own files and edits stay."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from new_project import CODE_NAME, IMAGES, PACKAGE, RECORD, head_commit
from support import GIT_ENV, template_repository

NAME = f"{PACKAGE}_copy"  # a copy of this template, or (run in a copy) a copy of that copy
# The copies' uv (uv lock in every update) takes the tests' interpreter as given, not one it finds on PATH: a pyenv
# shim there, which a copy's .python-version sends through pyenv's scripts, cost ~0.4 s a uv command.
ENV = {**GIT_ENV, "UV_PYTHON": sys.executable}
FIX = f'TEMPLATE_FIX = "{PACKAGE}.cli"  # a later fix in the machinery\n'
LIBRARY_FILE = "lightning-runs/lightning_runs/errors.py"  # the machinery, which a copy installs by version
CONFIG = "configs/experiments/tiny.yaml"  # a later config of the template, naming a class by its package


def git(repository: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repository, env=ENV, capture_output=True, text=True, check=True).stdout


def commit(repository: Path, message: str) -> None:
    git(repository, "add", "--all")
    git(repository, "commit", "--quiet", "-m", message)


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def append_to_first_line(path: Path, text: str) -> None:
    first, _, rest = path.read_text().partition("\n")
    path.write_text(f"{first}{text}\n{rest}")


def make(directory: Path, *args: str, env: dict[str, str] = ENV) -> subprocess.CompletedProcess:
    command = ["make", "--no-print-directory", *args, f"PYTHON={sys.executable}"]
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True)


def refused_update(copy: Path, *args: str) -> subprocess.CompletedProcess:
    """`make update-template` that stops: what it said, without the line make adds after a failing command (make
    exits 2 for any failing command); under `make test` that line reads `make[1]: ***`."""
    done = make(copy, "update-template", *args)
    lines = done.stderr.splitlines(keepends=True)
    done.stderr = "".join(line for line in lines if not re.match(r"make(\[\d+\])?: \*\*\* ", line))
    return done


@pytest.fixture(scope="module")
def made_once(tmp_path_factory) -> tuple[Path, Path]:
    """A repository of the template as it is here (uncommitted changes included) and two copies made from it by
    `make new-project`, without the image-folder DataModule (my-exp) and with it (with-images), made once for this
    file: `work` holds them, `pristine` a byte-for-byte snapshot of all three."""
    base = tmp_path_factory.mktemp("update")
    template = template_repository(base / "work" / "template")
    for dest, *choice in (("my-exp",), ("with-images", "IMAGES=1")):
        made = make(template, "new-project", f"DEST={template.parent / dest}", f"NAME={NAME}", *choice)
        assert made.returncode == 0, made.stderr
    for repository in (template, *(template.parent / dest for dest in ("my-exp", "with-images"))):  # one pack each
        git(repository, "repack", "-a", "-d", "-q")
    shutil.copytree(base / "work", base / "pristine", symlinks=True)
    return base / "work", base / "pristine"


@pytest.fixture
def template(made_once) -> Path:
    """The template repository, which a test can commit to: each test gets it and its copy as `make new-project`
    left them, at the same paths (the copy's record and pyproject.toml name the template by its absolute path)."""
    work, pristine = made_once
    shutil.rmtree(work)
    shutil.copytree(pristine, work, symlinks=True)
    return work / "template"


@pytest.fixture
def copy(template) -> Path:
    return template.parent / "my-exp"


def image_files(copy: Path) -> set[str]:
    """The image-folder DataModule's files the copy holds, as the template names them."""
    return {path for path in IMAGES if (copy / path.replace(f"{PACKAGE}/", f"{NAME}/", 1)).is_file()}


def test_an_update_keeps_each_copys_choice_of_the_image_folder_datamodule(copy, template):
    """A template change to images.py reaches the copy that kept it, renamed, and brings nothing into the copy that
    left it out; a copy made before the choice existed (no "images" in its record) holds the module and keeps it."""
    with_images, old = template.parent / "with-images", template.parent / "old"
    git(template.parent, "clone", "--quiet", str(with_images), str(old))
    record = json.loads((old / RECORD).read_text())
    del record["images"]
    (old / RECORD).write_text(json.dumps(record, indent=2) + "\n")
    commit(old, "A record as copies were made before the choice")
    append(template / PACKAGE / "images.py", f"\n\nLATER = {PACKAGE!r}  # a later change to the image DataModule\n")
    commit(template, "A change to images.py")
    for each in (copy, with_images, old):
        updated = make(each, "update-template")
        assert updated.returncode == 0, updated.stderr
    assert image_files(copy) == set() and json.loads((copy / RECORD).read_text())["images"] is False
    for kept in (with_images, old):
        assert image_files(kept) == set(IMAGES) and json.loads((kept / RECORD).read_text()).get("images", True)
        assert f"LATER = {NAME!r}  # a later change" in (kept / NAME / "images.py").read_text()
        assert git(kept, "status", "--porcelain") == ""


def test_a_choice_changed_in_the_record_brings_the_image_folder_datamodule_and_takes_it_away(copy):
    """As the copy's README says: "images": true in .template.json, committed, and the next update brings the
    module, though the template has not moved; false takes it away, as the template deleting it would."""
    assert "IMAGES=1" in (copy / "README.md").read_text() and "`.template.json`" in (copy / "README.md").read_text()
    for images, expected in ((True, set(IMAGES)), (False, set())):
        record = json.loads((copy / RECORD).read_text())
        (copy / RECORD).write_text(json.dumps({**record, "images": images}, indent=2) + "\n")
        commit(copy, f"images: {images}")
        updated = make(copy, "update-template")
        assert updated.returncode == 0, updated.stderr
        assert image_files(copy) == expected and git(copy, "status", "--porcelain") == ""
    assert "up to date" in make(copy, "update-template").stdout


def change_both_sides_and_update(copy: Path, template: Path) -> subprocess.CompletedProcess:
    """The copy edits its own network file; the template fixes its machinery and adds a config; then the update."""
    append(copy / NAME / "networks.py", "\n\nOURS = 1  # the copy's own edit\n")
    commit(copy, "Our own network change")
    append(template / LIBRARY_FILE, f"\n\n{FIX}")
    (template / CONFIG).write_text(
        f"# python -m {PACKAGE} fit --config configs/digits.yaml --config {CONFIG}\n"
        f"model:\n  network:\n    class_path: {PACKAGE}.networks.MLP\n    init_args:\n      hidden: [16]\n"
    )
    commit(template, "Fix the machinery, add a config")
    return make(copy, "update-template")


def library_source(copy: Path) -> str:
    """The copy's [tool.uv.sources] line for the library: the template's git repository at a commit."""
    return next(
        line for line in (copy / "pyproject.toml").read_text().splitlines() if line.startswith("lightning-runs =")
    )


def locked_commit(copy: Path) -> str:
    """The library's commit in the copy's uv.lock, which make install installs."""
    return re.search(
        r'name = "lightning-runs"\nversion = .*\nsource = \{ git = ".*#(\w+)" \}', (copy / "uv.lock").read_text()
    )[1]


def test_an_update_keeps_the_copys_edit_and_brings_the_templates_fix_and_new_config(copy, template):
    updated = change_both_sides_and_update(copy, template)
    assert updated.returncode == 0, updated.stderr
    assert "OURS = 1  # the copy's own edit" in (copy / NAME / "networks.py").read_text()
    # The fix arrives as the library's new version: the copy's dependency names the template's new commit.
    assert not (copy / "lightning-runs").exists()
    assert f'rev = "{head_commit(template)}"' in library_source(copy) and locked_commit(copy) == head_commit(template)
    assert f"The library is now the template's {head_commit(template)[:12]}" in updated.stdout
    config = (copy / CONFIG).read_text()
    assert f"{NAME}.networks.MLP" in config and f"python -m {NAME} fit" in config
    assert not CODE_NAME.search(config)
    assert git(copy, "status", "--porcelain") == ""
    # One commit on the copy's branch, a merge whose other side is the renamed template, now recorded.
    assert git(copy, "log", "-1", "--format=%s", "HEAD^1") == "Our own network change\n"
    assert len(git(copy, "rev-list", "--parents", "-1", "HEAD").split()) == 3
    record = json.loads((copy / RECORD).read_text())
    assert record["commit"] == git(template, "rev-parse", "HEAD").strip()
    assert f"Template-commit: {record['commit']}" in git(copy, "log", "-1", "--format=%B", "HEAD^2")


@pytest.mark.slow
def test_the_updated_copy_trains_with_the_new_config_and_the_template_package_unimportable(copy, template):
    assert change_both_sides_and_update(copy, template).returncode == 0
    args = ["fit", "--config", "configs/digits.yaml", "--config", CONFIG, "--trainer.fast_dev_run=true",
            "--trainer.enable_progress_bar=false"]  # fmt: skip
    code = (  # `python -m <the copy's package> ...`, with the template's package unimportable however installed
        f"import runpy, sys; sys.modules[{PACKAGE!r}] = None; sys.argv = [{NAME!r}, *sys.argv[1:]]; "
        f"runpy.run_module({NAME!r}, run_name='__main__', alter_sys=True)"
    )
    environment = {**ENV, "PYTHONPATH": str(copy)}  # the library: this template's, as installed here
    fit = subprocess.run([sys.executable, "-c", code, *args], cwd=copy, env=environment, capture_output=True, text=True)
    assert fit.returncode == 0, fit.stderr[-3000:]  # so the new config's class path names the copy's package
    assert git(copy, "status", "--porcelain") == ""  # runs/ is ignored


def installed_library(python: Path) -> tuple[str, str]:
    """The version and the commit (direct_url.json, as uv and pip write it) of the lightning-runs `python` imports."""
    code = (
        "import importlib.metadata as m, json; d = m.distribution('lightning-runs'); "
        "print(d.version, json.loads(d.read_text('direct_url.json'))['vcs_info']['commit_id'])"
    )
    version, commit = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return version, commit


@pytest.mark.slow
def test_make_install_after_an_update_runs_the_librarys_new_commit_though_its_version_is_the_same(copy, template):
    """uv installs the commit uv.lock names (pip kept an installed lightning-runs of the same version when the pinned
    commit moved: TRAPS.md, round four). Offline, from the cache the template's own install filled."""
    python = copy / ".venv/bin/python"
    own = {key: value for key, value in ENV.items() if key not in ("PYTHONPATH", "UV_PYTHON")}  # the copy decides
    installed = make(copy, "install", env=own)
    assert installed.returncode == 0, installed.stderr[-3000:]
    version, first = installed_library(python)
    assert first == head_commit(template)

    append(template / LIBRARY_FILE, f"\n\n{FIX}")
    commit(template, "Fix the machinery, the library's version unchanged")
    assert make(copy, "update-template").returncode == 0
    installed = make(copy, "install", env=own)  # as `make train` and `make test` run it first
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert installed_library(python) == (version, head_commit(template)) and first != head_commit(template)
    code = "import lightning_runs.errors as errors; print(errors.TEMPLATE_FIX, errors.__file__)"
    ran = subprocess.run([python, "-c", code], cwd=copy, env=own, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-3000:]
    fix, imported_from = ran.stdout.split()
    assert fix == f"{PACKAGE}.cli" and Path(imported_from).is_relative_to(copy / ".venv")


def test_then_both_sides_change_the_same_line_and_the_update_stops_with_conflict_markers(copy, template):
    assert change_both_sides_and_update(copy, template).returncode == 0
    ours = copy / NAME / "networks.py"
    append_to_first_line(ours, " (ours)")
    commit(copy, "Our first line")
    append_to_first_line(template / PACKAGE / "networks.py", " (the template's)")
    commit(template, "The template's first line")

    stopped = refused_update(copy)
    assert stopped.returncode != 0
    assert f"  {NAME}/networks.py\n" in stopped.stderr
    assert "git add" in stopped.stderr and "git commit" in stopped.stderr and "git merge --abort" in stopped.stderr
    text = ours.read_text()
    assert text.startswith("<<<<<<< HEAD\n") and " (ours)\n=======\n" in text and " (the template's)\n>>>>>>> " in text

    git(copy, "merge", "--abort")  # abandon, as the message says: the copy is as it was
    assert git(copy, "status", "--porcelain") == "" and "<<<<<<<" not in ours.read_text()

    assert make(copy, "update-template").returncode != 0  # again, and this time finish it
    git(copy, "checkout", "--ours", f"{NAME}/networks.py")  # our line is what it should be
    git(copy, "add", f"{NAME}/networks.py")
    git(copy, "commit", "--quiet", "--no-edit")
    assert ours.read_text().partition("\n")[0].endswith(" (ours)")
    assert "up to date" in make(copy, "update-template").stdout


def test_files_the_template_deletes_go_unless_the_copy_changed_them(copy, template):
    append(copy / "configs/gpu.yaml", "# the copy's own note\n")
    commit(copy, "Our GPU note")
    git(template, "rm", "--quiet", "configs/gpu.yaml", "configs/multinode.yaml")
    commit(template, "Drop two configs")
    updated = make(copy, "update-template")
    assert updated.returncode == 0, updated.stderr
    assert not (copy / "configs/multinode.yaml").exists()
    assert "# the copy's own note" in (copy / "configs/gpu.yaml").read_text()
    assert "Kept configs/gpu.yaml" in updated.stdout
    assert git(copy, "status", "--porcelain") == ""


def test_the_copy_holds_no_update_script_and_runs_the_templates_newest_one(copy, template):
    assert not (copy / "scripts/update_template.py").exists() and not (copy / "scripts/new_project.py").exists()
    script = template / "scripts/update_template.py"  # a later fix to the update itself
    script.write_text(script.read_text().replace("print(update(", 'print("the newest update"); print(update('))
    append(template / "README.md", "A later line.\n")
    commit(template, "A fix to the update")
    updated = make(copy, "update-template")
    assert updated.returncode == 0, updated.stderr
    assert updated.stdout.startswith("the newest update\n"), updated.stdout
    assert not (copy / "scripts/update_template.py").exists(), "the update brings no script into the copy"


def test_a_template_given_on_the_command_line_is_used_and_recorded(copy, template):
    moved = template.parent / "moved"
    git(template.parent, "clone", "--quiet", str(template), str(moved))
    (moved / "configs/news.yaml").write_text("# A later file.\n")
    commit(moved, "News")
    updated = make(copy, "update-template", f"TEMPLATE={moved}")
    assert updated.returncode == 0, updated.stderr
    assert (copy / "configs/news.yaml").is_file()
    assert json.loads((copy / RECORD).read_text())["template"] == str(moved)


def test_an_up_to_date_copy_says_so_and_is_left_as_it_is(copy):
    head = git(copy, "rev-parse", "HEAD")
    updated = make(copy, "update-template")
    assert updated.returncode == 0 and "Already up to date" in updated.stdout
    assert git(copy, "rev-parse", "HEAD") == head and git(copy, "status", "--porcelain") == ""


def test_a_copy_with_uncommitted_changes_is_refused_in_one_line_and_left_as_it_was(copy, template):
    append(template / "README.md", "A later line.\n")
    commit(template, "A template change the copy does not get yet")
    append(copy / NAME / "networks.py", "# not committed\n")
    head = git(copy, "rev-parse", "HEAD")
    refused = refused_update(copy)
    assert refused.returncode == 2 and refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1
    assert "uncommitted changes" in refused.stderr
    assert git(copy, "rev-parse", "HEAD") == head and (copy / NAME / "networks.py").read_text().endswith(
        "# not committed\n"
    )


@pytest.mark.parametrize("location", ["missing", "plain-folder"])
def test_a_template_location_that_is_not_a_git_repository_is_one_line_exit_2(copy, location):
    (copy.parent / "plain-folder").mkdir()
    refused = refused_update(copy, f"TEMPLATE={copy.parent / location}")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "is not a git repository" in refused.stderr


def test_a_recorded_commit_the_template_no_longer_has_is_one_line_exit_2(copy, template):
    git(template, "commit", "--quiet", "--amend", "-m", "The template, its history rewritten")
    refused = refused_update(copy)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "no longer has commit" in refused.stderr
    assert git(copy, "status", "--porcelain") == ""


def test_a_copy_that_is_not_a_git_repository_is_one_line_exit_2(copy):
    shutil.rmtree(copy / ".git")
    refused = refused_update(copy)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "is not the top folder of a git repository" in refused.stderr


def test_an_untracked_file_in_the_way_stops_the_update_before_it_begins(copy, template):
    (template / "configs/news.yaml").write_text("# The template's news.\n")
    commit(template, "News")
    (copy / "configs/news.yaml").write_text("# My own notes, never committed.\n")
    refused = refused_update(copy)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "news.yaml" in refused.stderr
    assert (copy / "configs/news.yaml").read_text() == "# My own notes, never committed.\n"
    assert git(copy, "status", "--porcelain") == "?? configs/news.yaml\n"


def test_files_of_the_copys_own_and_files_the_template_did_not_change_are_never_touched(copy, template):
    (copy / "configs/mine.yaml").write_text("# my own recipe\n")
    (copy / NAME / "extra.py").write_text("MINE = 1\n")
    commit(copy, "My own files")
    (copy / "scratch.txt").write_text("not committed\n")
    before = {path: path.read_bytes() for path in copy.rglob("*") if path.is_file() and ".git" not in path.parts}
    append(template / "configs/gpu.yaml", "# a later template note\n")
    commit(template, "A note in one config")
    assert make(copy, "update-template").returncode == 0
    after = {path: path.read_bytes() for path in copy.rglob("*") if path.is_file() and ".git" not in path.parts}
    changed = {str(path.relative_to(copy)) for path in before if after.get(path) != before[path]}
    assert changed == {"configs/gpu.yaml", RECORD, "pyproject.toml", "uv.lock"}  # the note, the record, the library
    assert set(after) == set(before)


@pytest.mark.slow
def test_a_copy_made_before_the_library_was_a_dependency_takes_it_with_the_templates_script_once(tmp_path):
    """docs/updating.md's one-time path: such a copy's own script would render the template as it did then (with
    the library as a folder), so it runs the template's: `python3 <template>/scripts/update_template.py`."""
    template = template_repository(tmp_path / "template", history=True)
    introduced = git(template, "log", "--diff-filter=A", "--format=%H", "--", "scripts/copy-README.md").split()[-1]
    old_template = tmp_path / "old-template"  # the template as it was just before: copies held lightning-runs/
    git(tmp_path, "clone", "--quiet", str(template), str(old_template))
    git(old_template, "checkout", "--quiet", f"{introduced}^")
    old = tmp_path / "old-copy"
    made = subprocess.run([sys.executable, "scripts/new_project.py", str(old), NAME], cwd=old_template, env=ENV)
    assert made.returncode == 0 and (old / "lightning-runs").is_dir() and (old / "benchmarks").is_dir()
    append(old / NAME / "networks.py", "\n\nOURS = 1  # the copy's own edit\n")
    commit(old, "Our own network change")

    moved = subprocess.run([sys.executable, str(template / "scripts/update_template.py"), "--template", str(template)],
                           cwd=old, env=ENV, capture_output=True, text=True)  # fmt: skip
    assert moved.returncode == 0, moved.stderr
    for gone in ("lightning-runs", "benchmarks", "tests/template", "template.mk"):
        assert not (old / gone).exists(), gone
    assert (old / "tests/test_workflow.py").is_file()
    assert f'rev = "{head_commit(template)}"' in library_source(old) and locked_commit(old) == head_commit(template)
    assert "OURS = 1  # the copy's own edit" in (old / NAME / "networks.py").read_text()
    assert git(old, "status", "--porcelain") == ""
    tests = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_configs.py"]
    tested = subprocess.run(tests, cwd=old, env={**ENV, "PYTHONPATH": str(old)}, capture_output=True, text=True)
    assert tested.returncode == 0, tested.stdout[-3000:]
