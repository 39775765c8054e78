"""End to end: train, test, resume and predict, as a user runs them."""

import csv
from pathlib import Path

import numpy as np
import pytest
import torch

from support import load, run, scalars, split_sizes, steps_per_epoch, working_directory

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """`make train`: fit the default config, then test its best checkpoint."""
    home = tmp_path_factory.mktemp("trained")
    with working_directory(home):
        fit = run("fit")
        test = run("test", "--ckpt_path", "best")
    return home / "runs/digits/version_0", fit, test


def test_default_fit_reaches_98_percent_test_accuracy(trained):
    run_dir, fit, test = trained
    assert fit.trainer.current_epoch > 10
    assert test.trainer.callback_metrics["test/acc"] >= 0.98
    assert {p.name for p in (run_dir / "checkpoints").iterdir()} == {"best.ckpt", "last.ckpt"}
    assert list(run_dir.glob("events.out.tfevents.*")) and (run_dir / "config.yaml").is_file()


def test_best_checkpoint_is_the_best_val_acc_and_last_is_the_final_step(trained):
    run_dir, fit, _ = trained
    best, last = load(run_dir / "checkpoints/best.ckpt"), load(run_dir / "checkpoints/last.ckpt")
    val_acc = [value for _, value in scalars(run_dir, "val/acc")]
    assert last["global_step"] == fit.trainer.global_step
    best_state = next(v for k, v in best["callbacks"].items() if "'val/acc'" in k)
    assert best_state["best_model_score"].item() == pytest.approx(max(val_acc))


def test_checkpoint_carries_the_train_statistics_for_new_inputs(trained):
    run_dir, fit, _ = trained
    state = load(run_dir / "checkpoints/best.ckpt")["state_dict"]
    # One value per input pixel: the train split's statistics, broadcast to the sample's shape.
    torch.testing.assert_close(state["input_mean"], fit.datamodule.mean.expand(8, 8))
    torch.testing.assert_close(state["input_std"], fit.datamodule.std.expand(8, 8))


def test_test_subcommand_takes_a_checkpoint_path_and_prints_test_acc(trained, capsys):
    run_dir, _, test = trained
    again = run("test", "--ckpt_path", str(run_dir / "checkpoints/best.ckpt"))
    assert "test/acc" in capsys.readouterr().out
    assert again.trainer.callback_metrics["test/acc"] == test.trainer.callback_metrics["test/acc"]


def test_predict_writes_one_row_per_test_digit(trained):
    run_dir, fit, _ = trained
    with working_directory(run_dir.parents[2]):  # the run's own runs root: its predictions go into the run
        run("predict", "--ckpt_path", str(run_dir / "checkpoints/best.ckpt"))
    with (run_dir / "predictions.csv").open() as file:
        rows = list(csv.DictReader(file))
    labels = fit.datamodule.splits["test"][1]
    assert len(rows) == len(labels) == split_sizes()["test"]
    predicted = torch.tensor([int(row["label"]) for row in rows])
    assert (predicted == labels).float().mean() >= 0.95


def test_predict_reads_a_file_of_raw_digits_and_never_overwrites(trained, tmp_path):
    run_dir, fit, _ = trained
    images, labels = fit.datamodule.splits["val"]
    np.save(tmp_path / "digits.npy", images.numpy())  # raw 0-16 pixels: the checkpoint normalizes them
    before = {p: p.read_bytes() for p in run_dir.glob("predictions*.csv")}
    with working_directory(run_dir.parents[2]):  # the run's own runs root: its predictions go into the run
        for _ in range(2):
            run(
                "predict",
                "--ckpt_path",
                str(run_dir / "checkpoints/best.ckpt"),
                f"--data.predict_path={tmp_path}/digits.npy",
            )
    after = set(run_dir.glob("predictions*.csv"))
    assert all(p.read_bytes() == content for p, content in before.items()), "earlier predictions untouched"
    new = sorted(after - set(before), key=lambda p: p.stat().st_mtime)
    assert len(new) == 2
    with new[-1].open() as file:
        predicted = torch.tensor([int(row["label"]) for row in csv.DictReader(file)])
    assert len(predicted) == len(labels) and (predicted == labels).float().mean() >= 0.95


def test_two_runs_of_the_same_config_and_seed_give_identical_validation_metrics():
    for _ in range(2):
        run("fit", "--trainer.max_epochs=3")
    first, second = (Path(f"runs/digits/version_{v}") for v in (0, 1))
    for tag in ("val/acc", "val/loss"):
        assert scalars(first, tag) == scalars(second, tag)


def test_a_second_run_with_ckpt_path_last_continues_from_the_saved_step(capsys):
    # Stopped after 2 of its 4 epochs (a crash as the third begins); the same command resumes it. (A run that
    # finished is not extended: see lightning-runs/tests/test_resume.py.)
    saved_step = 2 * steps_per_epoch()
    with pytest.raises(RuntimeError, match="crash"):
        crash = ["--trainer.callbacks+=support.CrashAt", f"--trainer.callbacks.step={saved_step}"]
        run("fit", "--trainer.max_epochs=4", "--ckpt_path=last", *crash)
    assert "starting from step 0" in capsys.readouterr().out
    assert load(Path("runs/digits/version_0/checkpoints/last.ckpt"))["global_step"] == saved_step

    second = run("fit", "--trainer.max_epochs=4", "--ckpt_path=last")
    assert second.trainer.global_step == 2 * saved_step
    assert sorted(p.name for p in Path("runs/digits").iterdir()) == ["version_0"], "no new version folder"
    steps = [step for step, _ in scalars(Path("runs/digits/version_0"), "train/loss")]
    assert steps == list(range(2 * saved_step)), "each step logged once: the resumed run did not restart at 0"
