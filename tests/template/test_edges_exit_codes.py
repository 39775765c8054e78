"""Exit codes tell the truth: a sweep whose every trial failed exits 1 and its failed trials are retried; Ctrl-C
exits 130 with a checkpoint to resume from and says why, even under --quiet; a full disk says "disk full" and
keeps the previous checkpoint (issue 13, item 8)."""

import errno
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
import yaml
from optuna.trial import TrialState

from lightning_runs.tools import sweep
from project.cli import cli_main
from support import DEFAULT, QUIET, load, refusal, run, run_subprocess, start, wait_for

RUN = Path("runs/digits/version_0")
LAST = RUN / "checkpoints/last.ckpt"
SHORT = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]


def sweep_file(dropout: dict) -> str:
    args = [*SHORT, *QUIET]
    Path("sweep.yaml").write_text(
        yaml.safe_dump({"study": "s", "space": {"model.network.dropout": dropout}, "args": args})
    )
    return "sweep.yaml"


@pytest.mark.slow
def test_a_sweep_whose_every_trial_failed_exits_1_and_the_same_command_retries_them_once_fixed(capsys):
    broken = sweep_file({"low": 1.5, "high": 2.0})  # no dropout above 1: every trial is refused
    command = ["--config", broken, "--configs", json.dumps([DEFAULT]), "--n_trials=2"]
    error = refusal(capsys, lambda: sweep.main(cli_main, command), code=1)
    assert "all 2 trials failed" in error and "retries them" in error

    sweep_file({"low": 0.0, "high": 0.5})  # fixed
    study = sweep.main(cli_main, command)
    states = [trial.state for trial in study.trials]
    assert states == [TrialState.FAIL, TrialState.FAIL, TrialState.COMPLETE, TrialState.COMPLETE]
    assert len(sweep.main(cli_main, command).trials) == 4, "finished: nothing more to run"


@pytest.mark.slow
def test_ctrl_c_saves_a_checkpoint_exits_130_and_says_so_under_quiet():
    process = start("fit", "--config", DEFAULT, "--quiet", "--trainer.max_epochs=30")
    wait_for(lambda: LAST.exists() or process.poll() is not None, what="the first checkpoint")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err[-2000:]
    step = load(LAST)["global_step"]
    assert (
        err.strip().splitlines()[-1] == f"stopped by Ctrl-C at step {step}; saved {LAST}; resume with --ckpt_path last"
    )
    assert "Traceback" not in err
    assert json.loads((RUN / "summary.json").read_text())["status"] == "interrupted"


def fill_the_disk_after(monkeypatch, n: int) -> None:
    """Checkpoint writes report a full disk from the n+1-th fsync on (two per file: the file, then its folder), as a
    filesystem that has run out of space does; other files are written as usual."""
    fsync, calls = os.fsync, []

    def fsync_on_a_filling_disk(fd):
        if "checkpoints" in os.readlink(f"/proc/self/fd/{fd}"):
            calls.append(fd)
            if len(calls) > n:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_on_a_filling_disk)


def test_a_full_disk_says_disk_full_and_keeps_the_previous_checkpoint(capsys):
    with pytest.MonkeyPatch.context() as patch:
        fill_the_disk_after(patch, 4)  # the first epoch's best.ckpt and last.ckpt are written, then the disk is full
        error = refusal(capsys, lambda: run("fit", *SHORT, "--trainer.max_epochs=2"), code=1)
    assert error.startswith("error: disk full writing runs/digits/version_0/checkpoints/")
    assert "is kept; free some space, then run the command again" in error
    assert load(LAST)["global_step"] == 2, "the previous checkpoint, whole"
    assert sorted(p.name for p in LAST.parent.iterdir()) == ["best.ckpt", "last.ckpt"], "no temp file left behind"


@pytest.fixture
def tiny_disk(tmp_path, request):
    """A 2.6 MB tmpfs mounted at ./disk, or the size a test parametrizes it with. Checkpoints are ~0.95 MB (weights
    and AdamW's two moments): best.ckpt and last.ckpt fit, a third copy in flight (the next epoch's, written beside
    its target) does not."""
    disk = tmp_path / "disk"
    disk.mkdir()
    size = getattr(request, "param", "2600k")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip()}); the fsync test stands in")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.slow
def test_a_really_full_disk_says_disk_full_and_keeps_the_previous_checkpoint(tiny_disk, capsys):
    args = [
        "--trainer.max_epochs=3",
        "--trainer.limit_train_batches=2",
        "--model.network.init_args.channels=[64, 128]",  # the ~0.95 MB checkpoints the disk's size is set for
        f"--trainer.logger.init_args.save_dir={tiny_disk}",
    ]
    error = refusal(capsys, lambda: run("fit", *args), code=1)
    assert "disk full writing" in error and "resumes from its last checkpoint with --ckpt_path last" in error
    last = tiny_disk / "digits/version_0/checkpoints/last.ckpt"
    assert load(last)["global_step"] == 2, "the previous checkpoint, whole"
    assert not [p for p in last.parent.iterdir() if p.name.startswith(".")], "no temp file left behind"


# Full before the first checkpoint, where writers that are not ours fill it: at 8k the run's config.yaml, at 20k
# TensorBoard's hparams.yaml, at 40k its event file (written by a background thread).
@pytest.mark.slow
@pytest.mark.parametrize("tiny_disk", ["8k", "20k", "40k"], indirect=True)
def test_a_disk_full_before_any_checkpoint_is_one_line_and_exit_1_whoever_was_writing(tiny_disk):
    done = run_subprocess("fit", "--config", DEFAULT, *SHORT, f"--trainer.logger.init_args.save_dir={tiny_disk}")
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: disk full writing"), done.stderr[-2000:]
    assert "free some space, then" in errors[0]
    assert not [path for path in tiny_disk.rglob("*") if path.is_file() and path.stat().st_size == 0], "no empty file"
