"""Never lose a run: a fit killed with -9 from outside, crashed between two step checkpoints or sent SIGTERM resumes
with `--ckpt_path last` (the same command finds its own checkpoint) to the weights, optimizer and callback states of an
uninterrupted fit, bit for bit, and logs the same losses and learning rates from where it resumed; a kill -9 loses at
most the step in flight. Stops at every single step, by signal and by kill from inside the run: test_resume_steps.py.
The data is the tiny task's in the library's stateful batches (TinyBatches), whose position a checkpoint holds."""

import signal
from pathlib import Path

import pytest
from tiny_runs import QUIET, Forked, assert_same_checkpoint, can_fork, load, run, scalars, start, wait_for

from lightning_runs.testing import CrashAt

pytestmark = pytest.mark.slow  # each test makes two or three real runs, some as processes

DATA = ["--data=tiny_tasks.TinyBatches"]
PER_EPOCH = 6  # TinyBatches' training batches: 192 points in full batches of 32
RUN = Path("runs/tiny/version_0")
LAST = RUN / "checkpoints/last.ckpt"


def in_dir(path: Path, *args: str):
    """`run(*args)` with `path` as the working directory."""
    path.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(path)
        return run(*args)


def assert_same_logs(reference: Path, resumed: Path, from_step: int) -> None:
    """Every loss and LR the resumed run logged from `from_step` on equals the uninterrupted run's."""
    for tag in ("train/loss", "lr-Adam"):
        expected = dict(scalars(reference, tag))
        logged = [(step, value) for step, value in scalars(resumed, tag) if step >= from_step]
        assert logged, tag
        assert all(expected[step] == value for step, value in logged), tag


def started(*args: str):
    """`python -m tiny_tasks fit` of the tiny batches in the background, once it has saved last.ckpt."""
    process = start("fit", *QUIET, *DATA, *args)
    wait_for(lambda: LAST.exists() or process.poll() is not None, what="the first checkpoint")
    return process


def killable(*args: str):
    """`started(*args)`, forked from this process where it can be: a fit to kill with -9 prints nothing a test reads."""
    if not can_fork():
        return started(*args)
    process = Forked(lambda: run("fit", *DATA, *args))
    wait_for(lambda: LAST.exists() or process.poll() is not None, what="the first checkpoint")
    return process


@pytest.mark.parametrize("precision", ["32", "16-mixed"])  # 16-mixed is bf16-mixed on a CPU
def test_resume_after_kill_9_is_exact(precision, tmp_path):
    args = ["--trainer.max_epochs=20", f"--trainer.precision={precision}"]
    in_dir(tmp_path / "reference", "fit", *DATA, *args)
    process = killable(*args)
    process.kill()
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    saved_step = load(LAST)["global_step"]
    assert 0 < saved_step < 20 * PER_EPOCH and saved_step % PER_EPOCH == 0

    resumed = run("fit", *DATA, *args, "--ckpt_path=last")
    assert resumed.trainer.global_step == 20 * PER_EPOCH
    reference = tmp_path / "reference" / RUN
    assert_same_checkpoint(load(reference / "checkpoints/last.ckpt"), load(LAST))
    assert_same_logs(reference, RUN, from_step=saved_step)


def test_resume_mid_epoch_from_a_step_checkpoint_is_exact(tmp_path):
    every = 4
    args = [*DATA, "--trainer.max_epochs=3", f"--last_checkpoint.every_n_train_steps={every}"]
    crash = PER_EPOCH + 5  # in the second epoch, past one of its step checkpoints
    saved = crash - crash % every  # that step checkpoint, mid-epoch
    assert saved % PER_EPOCH
    in_dir(tmp_path / "reference", "fit", *args)
    with pytest.raises(RuntimeError, match=f"crash at step {crash}"):
        run("fit", *args, callbacks=[CrashAt(step=crash)])
    assert load(LAST)["global_step"] == saved

    run("fit", *args, "--ckpt_path=last")
    reference = tmp_path / "reference" / RUN
    assert_same_checkpoint(load(reference / "checkpoints/last.ckpt"), load(LAST))
    assert_same_logs(reference, RUN, from_step=saved)


def test_sigterm_saves_a_checkpoint_exits_143_and_the_resume_is_exact(tmp_path):
    args = ["--trainer.max_epochs=20"]
    in_dir(tmp_path / "reference", "fit", *DATA, *args)
    process = started(*args)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err[-2000:]
    assert "stopped by SIGTERM at step" in err and "resume with --ckpt_path last" in err
    stopped_at = load(LAST)["global_step"]
    # Flushed: every step before the one in flight is logged, none after it. That step is in the checkpoint; its scalars
    # are logged too where the stop came at an epoch's end, whose logging ran first (the tiny task's epochs are short).
    steps = [step for step, _ in scalars(RUN, "train/loss")]
    assert steps == list(range(len(steps))) and stopped_at - 1 <= len(steps) <= stopped_at, (steps, stopped_at)

    run("fit", *DATA, *args, "--ckpt_path=last")
    reference = tmp_path / "reference" / RUN
    assert_same_checkpoint(load(reference / "checkpoints/last.ckpt"), load(LAST))
    assert_same_logs(reference, RUN, from_step=stopped_at)


def test_kill_9_loses_at_most_the_step_in_flight_and_the_events_stay_readable():
    process = killable("--trainer.max_epochs=1000", "--early_stopping.patience=1000")
    wait_for(lambda: len(scalars(RUN, "train/loss")) > 30 or process.poll() is not None, what="30 logged steps")
    process.kill()
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    steps = [step for step, _ in scalars(RUN, "train/loss")]
    assert steps == list(range(len(steps))) and len(steps) > 30
