"""The commit a run records is its owner's: the repository holding the owner's package, wherever the environment
and this library are installed (a conda or shared environment lies outside the project), else the working
directory's; dirty where a tracked file or a new module differs from it. The resolved config a run saves is whole or
absent whenever another command reads it."""

import builtins
import json
import os
import subprocess
from pathlib import Path

import yaml

from lightning_runs.errors import main
from lightning_runs.records.provenance import git_state
from tiny_tasks import TRAINER_DEFAULTS, TinyCLI, TinyDataModule, cli_main

# No developer's git settings (signing, hooks) in the tests' repositories, and an identity for their commits.
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
GIT_ENV |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(folder), *args], env=GIT_ENV, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def repository(folder: Path, files: dict[str, str]) -> str:
    """A git repository at `folder` holding `files`, committed; its commit."""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    git(folder, "init", "--quiet")
    git(folder, "add", "--all")
    git(folder, "commit", "--quiet", "-m", "the owner's project")
    return git(folder, "rev-parse", "HEAD")


OWNER_MODEL = "from tiny_tasks import TinyClassifier\n\n\nclass OwnersClassifier(TinyClassifier):\n    pass\n"


def test_a_run_records_the_commit_of_the_repository_holding_the_owners_package(tmp_path, monkeypatch):
    owner = tmp_path / "owner"  # the owner's checkout; this library is imported from elsewhere
    commit = repository(owner, {"owners_project/__init__.py": "", "owners_project/model.py": OWNER_MODEL})
    monkeypatch.syspath_prepend(str(owner))  # as an editable install or PYTHONPATH puts it
    started = tmp_path / "elsewhere"  # a working directory in no repository
    started.mkdir()
    monkeypatch.chdir(started)
    from owners_project.model import OwnersClassifier

    args = ["fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2", "--trainer.enable_progress_bar=false"]
    main(lambda: TinyCLI(OwnersClassifier, TinyDataModule, trainer_defaults=TRAINER_DEFAULTS, args=args))
    summary = json.loads(Path("runs/owners_project/version_0/summary.json").read_text())  # named for its package
    assert summary["git"] == {"commit": commit, "dirty": False}
    library = subprocess.run(
        ["git", "-C", str(Path(__file__).parent), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    assert commit != library.stdout.strip(), "not the library's repository (none where it runs from its sdist)"

    (owner / "my_run.yaml").write_text("trainer: {}\n")  # a scratch config: no code that ran
    assert git_state("owners_project") == {"commit": commit, "dirty": False}
    (owner / "owners_project/regression.py").write_text("# a new module, not yet added\n")
    assert git_state("owners_project") == {"commit": commit, "dirty": True}
    (owner / "owners_project/regression.py").unlink()
    (owner / "owners_project/model.py").write_text(OWNER_MODEL + "# an uncommitted change\n")
    assert git_state("owners_project") == {"commit": commit, "dirty": True}


def test_a_package_installed_outside_any_repository_records_the_working_directorys_commit(tmp_path, monkeypatch):
    installed = tmp_path / "site-packages"  # as `pip install .` (not editable) leaves the package
    (installed / "owners_installed").mkdir(parents=True)
    (installed / "owners_installed/__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(installed))
    checkout = tmp_path / "checkout"
    commit = repository(checkout, {"configs/run.yaml": "trainer: {}\n"})
    monkeypatch.chdir(checkout)
    assert git_state("owners_installed") == {"commit": commit, "dirty": False}


def test_a_runs_config_yaml_is_never_seen_half_written(monkeypatch):
    # A resume of the run, or an evaluation of its checkpoint, reads it (cli/placement.py) to compare the recipe or to
    # parse the run's config: an emptied or half file there was refused or read as another recipe. Written whole
    # beside it and renamed in (atomic.py), it is never opened in place.
    opened = []
    real_open = builtins.open

    def spying_open(file, mode="r", *args, **kwargs):
        if str(file).endswith("config.yaml") and set(mode) & set("wax+"):
            opened.append(file)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spying_open)
    main(lambda: cli_main(["fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]))
    saved = Path("runs/tiny/version_0/config.yaml")
    assert yaml.safe_load(saved.read_text())["data"]["class_path"] == "tiny_tasks.TinyDataModule"
    assert opened == [], "config.yaml was opened for writing in place"


def test_a_run_records_the_lock_its_environment_came_from_and_what_differs(tmp_path, monkeypatch):
    """summary.json's `environment`: the nearest uv.lock above the owner's package, its hash, and each installed release
    it names at another version; the runs table marks such a run."""
    import hashlib
    import importlib.metadata
    import sys

    from lightning_runs.records.provenance import environment
    from lightning_runs.tools.runs import list_runs

    numpy = importlib.metadata.version("numpy")
    package = tmp_path / "repo" / "mine"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    lock = tmp_path / "repo" / "uv.lock"
    entries = [("numpy", numpy), ("torch", importlib.metadata.version("torch")), ("not-installed-here", "1.0")]
    lock.write_text("version = 1\n" + "".join(f'[[package]]\nname = "{n}"\nversion = "{v}"\n' for n, v in entries))
    monkeypatch.syspath_prepend(str(tmp_path / "repo"))
    sys.modules.pop("mine", None)
    same = environment("mine")
    assert same == {"lock": str(lock), "lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest(), "differs": []}
    lock.write_text(lock.read_text().replace(f'"{numpy}"', '"0.0.1"'))
    assert environment("mine")["differs"] == [f"numpy {numpy} (lock: 0.0.1)"]

    for version, differs in enumerate(([], [f"numpy {numpy} (lock: 0.0.1)"])):
        run = tmp_path / "runs" / "tiny" / f"version_{version}"
        run.mkdir(parents=True)
        summary = {"status": "completed", "environment": {"lock_sha256": "abcdef123456", "differs": differs}}
        (run / "summary.json").write_text(json.dumps(summary))
    rows = list_runs(root=tmp_path / "runs")
    assert [row["env"] for row in rows] == ["abcdef1 (differs)", "abcdef1"]
