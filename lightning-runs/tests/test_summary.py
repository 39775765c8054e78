"""summary.json: its config hash (the recipe a resume compares, configs.py), its atomic write, what a resumed run and
an evaluation add to it, and a summary.json that is corrupt or not a run's, kept aside while the evaluation goes on."""

import errno
import json
import math
import os
import shutil
from pathlib import Path

import pytest
from tiny_runs import run, scalars, slow_repeats

from lightning_runs.configs import config_hash, differences
from lightning_runs.run_folders import write_json  # how RunSummary writes summary.json

CONFIG = {
    "seed_everything": 0,
    "model": {"class_path": "tiny_tasks.TinyClassifier", "init_args": {"lr": 0.01}},
    "trainer": {"max_epochs": 3, "devices": 1, "logger": {"init_args": {"name": "tiny", "version": 0}}},
    "best_checkpoint": {"init_args": {"monitor": "val/loss", "mode": "min"}},
    "ckpt_path": None,
    "name": "tiny",
    "quiet": False,
}


def test_the_same_recipe_has_the_same_config_hash_whatever_its_run_folder_or_its_terminal():
    elsewhere = {**CONFIG, "name": "other", "trainer": {**CONFIG["trainer"], "logger": {"init_args": {"version": 7}}}}
    shown = {**CONFIG, "quiet": True, "ckpt_path": "last", "trainer": {**CONFIG["trainer"], "enable_progress_bar": 0}}
    other = {**CONFIG, "model": {"class_path": "tiny_tasks.TinyClassifier", "init_args": {"lr": 0.02}}}
    assert config_hash(CONFIG) == config_hash(elsewhere) == config_hash(shown) != config_hash(other)


@pytest.mark.parametrize(
    "change",
    [
        {"trainer": {**CONFIG["trainer"], "max_epochs": 9}},
        {"trainer": {**CONFIG["trainer"], "devices": 2}},
        {"best_checkpoint": {"init_args": {"monitor": "val/acc", "mode": "max"}}},
        {"seed_everything": 1},
        {"trainer": {**CONFIG["trainer"], "callbacks": [{"class_path": "lightning_runs.testing.CrashAt"}]}},
        {"test_best": True},
    ],
    ids=["max_epochs", "devices", "monitor", "seed", "a callback", "test_best"],
)
def test_the_config_hash_changes_exactly_where_a_resume_refuses_the_difference(change):
    changed = {**CONFIG, **change}
    assert (config_hash(changed) != config_hash(CONFIG)) == bool(differences(CONFIG, changed))


def test_a_summary_write_that_fails_leaves_the_previous_one_whole(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    write_json(path, {"status": "running"})

    def broken_fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space left"):
        write_json(path, {"status": "completed"})
    assert json.loads(path.read_text()) == {"status": "running"}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"], "no temporary file left behind"


def summary(version: int = 0) -> dict:
    return json.loads(Path(f"runs/tiny/version_{version}/summary.json").read_text())


ONE_EPOCH = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]


@pytest.mark.slow
def test_a_run_shown_otherwise_or_resumed_keeps_its_recipes_hash():
    run("fit", *ONE_EPOCH)
    run("fit", *ONE_EPOCH, "--quiet", "--trainer.enable_model_summary=true")  # runs/tiny/version_1
    with pytest.raises(RuntimeError, match="crash at step 2"):  # runs/tiny/version_2, as its second epoch begins
        run("fit", *ONE_EPOCH, "--trainer.callbacks+=lightning_runs.testing.CrashAt", "--trainer.callbacks.step=2")
    crashed = summary(2)
    run("fit", *ONE_EPOCH, "--ckpt_path=last")
    resumed = summary(2)
    assert (crashed["status"], resumed["status"], resumed["resumed_from"]) == (
        "failed",
        "completed",
        "checkpoints/last.ckpt",
    )
    assert summary(0)["config_hash"] == summary(1)["config_hash"] == crashed["config_hash"] == resumed["config_hash"]
    assert resumed["config"]["ckpt_path"] == "runs/tiny/version_2/checkpoints/last.ckpt", "the resume's own config"


@pytest.mark.slow
def test_a_test_on_the_runs_own_data_updates_its_metrics_and_a_test_on_other_data_never_does():
    run("fit", *ONE_EPOCH)
    run("test", "--ckpt_path=best", "--data.batch_size=16")  # the same points in other batches: the run's own data
    own = summary()
    run("test", "--ckpt_path=best", "--data.seed=1")  # other points
    other = summary()
    assert [e["data"]["init_args"]["seed"] for e in other["evaluations"]] == [0, 1]
    assert own["metrics"]["test/loss"] == own["evaluations"][0]["metrics"]["test/loss"]
    assert other["metrics"] == own["metrics"], "the other data's test/loss is in its evaluation only"
    assert other["evaluations"][1]["metrics"]["test/loss"] != own["metrics"]["test/loss"]
    assert other["evaluations"][1]["checkpoint"] == "checkpoints/best.ckpt"
    # TensorBoard's HPARAMS entry: declared (NaN) as the fit started, then the own data's score only.
    logged = [value for _, value in scalars("runs/tiny/version_0", "hp/test_loss")]
    assert math.isnan(logged[0]) and logged[1:] == [pytest.approx(own["metrics"]["test/loss"])]


UNREADABLE = [b"[" * 100_000, b"{not json", b'{"evaluations": 5}', b"[1, 2]"]


# Every day a file that does not read as a mapping (read_run_data raises) and a mapping that is no summary; the
# other two raise as "deep" does.
@pytest.mark.parametrize(
    "content",
    slow_repeats(UNREADABLE, ["deep", "corrupt", "foreign", "a list"], {"corrupt": "deep", "a list": "deep"}),
)
def test_a_corrupt_or_foreign_summary_is_kept_aside_and_the_evaluation_goes_on(finished, content):
    shutil.copytree(finished, "runs")
    folder = Path("runs/tiny/version_0")
    (folder / "summary.json").write_bytes(content)
    with pytest.warns(UserWarning, match="summary.json is not a run summary: kept as summary.unreadable.json"):
        run("test", "--ckpt_path=last")
    assert (folder / "summary.unreadable.json").read_bytes() == content, "kept, byte for byte"
    assert summary()["evaluations"][0]["subcommand"] == "test"
