"""A full disk says "disk full" in one line, exit 1, and keeps the previous checkpoint whole, whoever was writing
(issue 13, item 8)."""

import errno
import os
import subprocess
from pathlib import Path

import pytest
from tiny_runs import command, load, refusal, run

RUN = Path("runs/tiny/version_0")
LAST = RUN / "checkpoints/last.ckpt"
SHORT = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
# A hidden layer of 10,000 units: 80,000 parameters, the ~0.97 MB checkpoints the tiny disk's size is set for.
WIDE = ["--model=tiny_networks.WithNetwork", "--model.network=tiny_networks.Hidden", "--model.network.widths=[10000]"]


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
    assert error.startswith("error: runs/tiny/version_0/checkpoints/") and ".ckpt: disk full; free some space" in error
    assert load(LAST)["global_step"] == 2, "the previous checkpoint, whole"
    assert sorted(p.name for p in LAST.parent.iterdir()) == ["best.ckpt", "last.ckpt"], "no temp file left behind"


@pytest.fixture
def tiny_disk(tmp_path, request):
    """A 2.6 MB tmpfs mounted at ./disk, or the size a test parametrizes it with. Checkpoints of WIDE are ~0.97 MB
    (weights and Adam's two moments): best.ckpt and last.ckpt fit, a third copy in flight (the next epoch's, written
    beside its target) does not."""
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
        *WIDE,
        f"--trainer.logger.init_args.save_dir={tiny_disk}",
    ]
    error = refusal(capsys, lambda: run("fit", *args), code=1)
    assert "disk full; free some space" in error and "(a fit resumes with --ckpt_path last)" in error
    last = tiny_disk / "tiny/version_0/checkpoints/last.ckpt"
    assert load(last)["global_step"] == 2, "the previous checkpoint, whole"
    assert not [p for p in last.parent.iterdir() if p.name.startswith(".")], "no temp file left behind"


# Full before the first checkpoint, where writers that are not ours fill it: at 8k the run's config.yaml, at 16k and
# 20k TensorBoard's hparams.yaml or its event file, at 40k the event file (written by a background thread, which names
# no file: the run's folder is named).
@pytest.mark.slow
@pytest.mark.parametrize("tiny_disk", ["8k", "16k", "20k", "40k"], indirect=True)
def test_a_disk_full_before_any_checkpoint_is_one_line_and_exit_1_whoever_was_writing(tiny_disk):
    done = command("fit", *SHORT, f"--trainer.logger.init_args.save_dir={tiny_disk}")
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {tiny_disk}/"), done.stderr[-2000:]
    assert ": disk full; " in errors[0], done.stderr[-2000:]
    assert "free some space, then" in errors[0] and "could not record" not in done.stderr, "one line, naming a path"
    assert not [path for path in tiny_disk.rglob("*") if path.is_file() and path.stat().st_size == 0], "no empty file"
