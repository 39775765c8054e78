"""`make new-project DEST=... NAME=...`: a renamed copy of this template that passes its own tests."""

import json
import os
import re
import subprocess
import sys

import pytest

from new_project import CODE_NAME, PACKAGE, RECORD, TRAILER, check_name, head_commit, rename
from support import ROOT

NAME = f"{PACKAGE}_copy"  # the template itself is `project`; a copy of a copy works the same way


def test_the_package_is_renamed_where_it_is_code_and_nowhere_else():
    code = 'python -m project fit; from project.cli import x; "project.networks.MLP"; project/data.py; ["project*"]'
    assert rename(code, NAME) == code.replace(PACKAGE, NAME)
    prose = "[project.optional-dependencies] a project template; pyproject.toml; pypi.org/project/x; new-project"
    assert rename(prose, NAME) == prose


@pytest.mark.parametrize("name", ["My-Exp", "1exp", "class", PACKAGE])
def test_a_name_that_is_not_a_new_package_name_is_refused(name):
    with pytest.raises(ValueError):
        check_name(name)


@pytest.fixture(scope="module")
def created(tmp_path_factory):
    dest = tmp_path_factory.mktemp("new") / "my-exp"
    identity = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.com"}
    identity |= {"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "t@example.com"}
    result = subprocess.run(
        ["make", "--no-print-directory", "new-project", f"DEST={dest}", f"NAME={NAME}", f"PYTHON={sys.executable}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **identity},
    )
    assert result.returncode == 0, result.stderr
    return dest


def in_project(dest, *command: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """A command in the new project, where importing this template's package fails loudly."""
    blocker = dest.parent / "blocker"
    (blocker / PACKAGE).mkdir(parents=True, exist_ok=True)
    (blocker / PACKAGE / "__init__.py").write_text(f"raise ImportError('the copy imported {PACKAGE}')\n")
    # The copy's own lightning-runs/, which it still holds (phase 1 of issue 21), before the one installed here.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, [dest, dest / "lightning-runs", blocker]))}
    return subprocess.run(command, cwd=dest, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.slow
def test_the_copy_has_the_new_package_a_readme_of_its_own_and_no_outputs(created):
    assert (created / NAME / "cli.py").is_file() and not (created / PACKAGE).exists()
    assert (created / "README.md").read_text().startswith(f"# {NAME}\n")
    assert f'name = "{NAME}"' in (created / "pyproject.toml").read_text()
    for left_behind in ("runs", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", "lightning_logs"):
        assert not list(created.rglob(left_behind)), left_behind
    assert os.access(created / ".ci/run", os.X_OK)
    for path in created.rglob("*"):
        if path.is_file() and ".git" not in path.parts and path.name != RECORD:  # the record names the template
            assert not CODE_NAME.search(path.read_text(errors="ignore")), f"{path} still names {PACKAGE}"


@pytest.mark.slow
def test_the_copy_is_a_new_git_repository_with_everything_committed(created):
    log = subprocess.run(["git", "log", "--oneline"], cwd=created, capture_output=True, text=True, check=True)
    assert len(log.stdout.splitlines()) == 1 and NAME in log.stdout
    status = subprocess.run(["git", "status", "--porcelain"], cwd=created, capture_output=True, text=True)
    assert status.stdout == ""


def test_the_copy_records_the_template_and_the_commit_it_was_made_from(created):
    record = json.loads((created / RECORD).read_text())
    assert record == {"template": str(ROOT), "commit": head_commit(ROOT), "template_package": PACKAGE, "package": NAME}
    message = subprocess.run(["git", "log", "-1", "--format=%B"], cwd=created, capture_output=True, text=True).stdout
    assert message.strip().endswith(f"{TRAILER} {record['commit']}")  # where `make update-template` merges onto


@pytest.mark.slow
def test_the_copy_trains_under_its_new_name_and_passes_its_own_fast_tests(created):
    fit = in_project(created, sys.executable, "-m", NAME, "fit", "--config", "configs/digits.yaml",
                     "--trainer.fast_dev_run=true", "--trainer.enable_progress_bar=false")  # fmt: skip
    assert fit.returncode == 0, fit.stderr[-3000:]
    tests = in_project(created, sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert re.search(r"\d+ passed", tests.stdout)
