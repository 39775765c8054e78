"""What a failure leaves behind can be trusted: a checkpoint write killed midway leaves the previous checkpoint whole
and no temporary file, no checkpoint ever holds a non-finite weight (a NaN loss stops the run at its step, with one
line saying so), and a crash keeps every scalar logged before it."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny_runs import load, process_environment, run, scalars, wait_for

from lightning_runs.checkpoints import AtomicCheckpointIO

WRITER = """
import sys, torch
from lightning_runs.checkpoints import AtomicCheckpointIO
io, n = AtomicCheckpointIO(), 0
while True:
    n += 1
    io.save_checkpoint({"state_dict": {"w": torch.full((4_000_000,), float(n))}, "n": n}, sys.argv[1])
"""


@pytest.mark.slow
def test_a_kill_during_checkpoint_writes_leaves_a_whole_checkpoint_and_no_temp_files(tmp_path):
    target = tmp_path / "checkpoints" / "last.ckpt"
    env = {**process_environment(), "TMPDIR": "/dev/shm"}  # $TMPDIR on another filesystem changes nothing
    for delay in (0.3, 0.5, 0.7, 0.9, 1.1, 1.3):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], env=env)
        wait_for(target.exists, what="a first checkpoint")
        try:
            writer.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            writer.kill()
            writer.wait()
        checkpoint = torch.load(target, weights_only=True)
        assert torch.equal(checkpoint["state_dict"]["w"], torch.full((4_000_000,), float(checkpoint["n"])))
        assert [p.name for p in target.parent.iterdir()] == ["last.ckpt"]


def test_non_finite_weights_are_never_written(tmp_path):
    with pytest.raises(FloatingPointError, match="non-finite"):
        AtomicCheckpointIO().save_checkpoint({"state_dict": {"w": torch.tensor([1.0, float("nan")])}}, tmp_path / "x")
    assert not list(tmp_path.iterdir())


def test_a_nan_loss_stops_the_run_at_that_step_with_a_clear_message(capsys):
    with pytest.raises(SystemExit) as exit_:
        run("fit", "--trainer.max_epochs=3", "--model=tiny_tasks.NaNAfter", "--model.step=8")
    assert exit_.value.code == 1
    assert "step 8: the loss or its gradients are NaN/Inf" in capsys.readouterr().err
    (run_dir,) = Path("runs").glob("*/version_0")
    assert max(step for step, _ in scalars(run_dir, "train/loss")) == 7, "stopped at step 8, its NaN never logged"
    checkpoints = list((run_dir / "checkpoints").glob("*.ckpt"))
    assert checkpoints, "the first epoch's, from before the NaN"
    for path in checkpoints:
        weights = load(path)["state_dict"]
        assert all(torch.isfinite(t).all() for t in weights.values() if t.is_floating_point()), path


def test_a_crash_keeps_every_scalar_logged_before_it():
    with pytest.raises(RuntimeError, match="crash at step 10"):
        run(
            "fit",
            "--trainer.max_epochs=3",
            "--trainer.callbacks+=lightning_runs.testing.CrashAt",
            "--trainer.callbacks.step=10",
        )
    run_dir = Path("runs/tiny/version_0")
    assert [step for step, _ in scalars(run_dir, "train/loss")] == list(range(10))
    assert [step for step, _ in scalars(run_dir, "lr-Adam")] == list(range(10))


def test_a_refused_predict_of_a_runs_checkpoint_adds_nothing_to_the_run(capsys):
    from tiny_runs import refusal, snapshot

    # A predict_step of twice the rows, refused once the first batch is predicted: after the run's config and
    # events file for the predict were written.
    run("fit", "--trainer.max_epochs=1", "--model=test_predictions.Twice")
    before = snapshot()
    line = refusal(capsys, lambda: run("predict", "--ckpt_path=runs/tiny/version_0/checkpoints/best.ckpt"))
    assert "return one row per input" in line
    assert snapshot() == before  # no config.predict.yaml, events file or summary change left behind
