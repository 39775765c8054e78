"""Exact resume under DDP through the example, until it moves to the library's DDP tests with the rest of
tests/template/test_ddp.py; the other failures are lightning-runs/tests' (test_exact_resume.py, test_bad_input.py,
test_what_failures_leave.py)."""

from pathlib import Path

import pytest

from support import DEFAULT, QUIET, assert_same_checkpoint, load, run_subprocess, steps_per_epoch

RUN = Path("runs/digits/version_0")
LAST = RUN / "checkpoints/last.ckpt"


# 12. DDP faults: the kill of a rank is in test_ddp_faults.py; the 2-process resume is here.
@pytest.mark.slow
def test_two_process_ddp_resume_at_an_epoch_boundary_is_exact(tmp_path):
    ddp = ["--config", DEFAULT, *QUIET, "--trainer.strategy=ddp", "--trainer.devices=2", "--trainer.max_epochs=3"]
    (tmp_path / "reference").mkdir()
    reference = run_subprocess("fit", *ddp, cwd=tmp_path / "reference")
    assert reference.returncode == 0, reference.stderr[-2000:]
    per_epoch = steps_per_epoch(world_size=2)
    crash = ["--trainer.callbacks+=support.CrashAt", f"--trainer.callbacks.step={2 * per_epoch + per_epoch // 2}"]
    crashed = run_subprocess("fit", *ddp, *crash)  # halfway through the third epoch: last.ckpt is the second's end
    assert crashed.returncode != 0 and load(LAST)["global_step"] == 2 * per_epoch, crashed.stderr[-2000:]
    resumed = run_subprocess("fit", *ddp, "--ckpt_path=last")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_checkpoint(load(tmp_path / "reference" / RUN / "checkpoints/last.ckpt"), load(LAST))
