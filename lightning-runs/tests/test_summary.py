"""summary.json's building blocks: the config hash, the atomic write and the commit's dirty flag; and a summary.json
that is corrupt or not a run's, kept aside while the evaluation goes on (issue 13, item 7)."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tiny_runs import run

from lightning_runs.folders.layout import write_json  # how RunSummary writes summary.json
from lightning_runs.folders.recipes import recipe_hash as config_hash
from lightning_runs.records.provenance import git_state


def test_the_same_recipe_has_the_same_config_hash_whatever_its_run_folder():
    config = {"model": {"lr": 0.01}, "trainer": {"logger": {"init_args": {"version": 0}}}, "ckpt_path": None}
    moved = {**config, "trainer": {"logger": {"init_args": {"version": 7}}}, "ckpt_path": "last"}
    other = {**config, "model": {"lr": 0.02}}
    assert config_hash(config) == config_hash(moved) != config_hash(other)


def test_the_config_hash_is_the_recipe_that_ckpt_path_last_resumes():
    # A config moving a recipe to other devices: `--ckpt_path last` finds the same run, so does the hash.
    config = {"model": {"lr": 0.01}, "trainer": {"max_epochs": 3, "devices": 1, "accelerator": "cpu"}}
    on_gpus = {**config, "trainer": {"max_epochs": 3, "devices": 2, "accelerator": "gpu"}}
    longer = {**config, "trainer": {"max_epochs": 9, "devices": 1, "accelerator": "cpu"}}
    assert config_hash(config) == config_hash(on_gpus) != config_hash(longer)


def test_a_summary_write_that_fails_leaves_the_previous_one_whole(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    write_json(path, {"status": "running"})

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        write_json(path, {"status": "completed"})
    assert json.loads(path.read_text()) == {"status": "running"}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"], "no temporary file left behind"


def test_a_run_is_dirty_only_when_tracked_files_differ_from_the_commit(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "--quiet")
    (tmp_path / "model.py").write_text("lr = 0.01\n")
    git("add", "model.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "model")
    (tmp_path / "my_run.yaml").write_text("model:\n  lr: 0.003\n")  # a user's scratch config, untracked
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "model.py").write_text("lr = 0.02\n")
    assert git_state(tmp_path)["dirty"] is True


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """runs/ of a short finished fit."""
    home = tmp_path_factory.mktemp("finished")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2")
    return home / "runs"


@pytest.mark.parametrize(
    "content,problem",
    [(b"{not json", "is not JSON"), (b"[1, 2]", "not a run summary"), (b'{"evaluations": 5}', "not a run summary")],
    ids=["corrupt", "a list", "foreign"],
)
def test_a_corrupt_or_foreign_summary_is_kept_aside_and_the_evaluation_goes_on(finished, content, problem):
    shutil.copytree(finished, "runs")
    folder = Path("runs/tiny/version_0")
    summary = folder / "summary.json"
    summary.write_bytes(content)
    with pytest.warns(UserWarning, match=problem):
        run("test", "--ckpt_path=last")
    assert (folder / "summary.unreadable.json").read_bytes() == content, "kept, byte for byte"
    assert json.loads(summary.read_text())["evaluations"][0]["subcommand"] == "test"
