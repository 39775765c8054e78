"""A DDP rank killed with SIGKILL (OOM killer, lost node) takes the whole job down: no hang, no orphan."""

import ctypes
import os
import signal
import subprocess
import sys
from contextlib import contextmanager, suppress

import psutil
import pytest
from tiny_runs import QUIET, process_environment, wait_for

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
DEADLINE = 30  # seconds for every rank to exit once one is killed (gloo notices a closed peer in ~2 s)


@contextmanager
def adopting_orphans():
    """Orphaned descendants are re-parented to this process instead of init, so their exit status is ours to read.

    Lightning's rank 1 is a child of rank 0: killing rank 0 orphans it.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip(f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def exit_code(pid: int) -> int | None:
    """The exit code of a finished child (or adopted orphan) of this process, reaping it; None while it runs."""
    with suppress(ChildProcessError):  # not (or no longer) ours: reaped by its own parent
        done, status = os.waitpid(pid, os.WNOHANG)
        return os.waitstatus_to_exitcode(status) if done else None
    return None


def wait_for_exit(pid: int, timeout: float) -> int:
    code = None

    def exited() -> bool:
        nonlocal code
        code = exit_code(pid)
        return code is not None

    wait_for(exited, timeout, f"process {pid} to exit")
    return code


def running(process: psutil.Process) -> bool:
    with suppress(psutil.NoSuchProcess):
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="adopting orphans needs Linux's prctl")
@pytest.mark.parametrize("victim", [0, 1])
def test_kill_9_of_either_rank_ends_every_rank_non_zero_with_no_orphans(tmp_path, victim):
    fit = [
        sys.executable, "-m", "tiny_tasks", "fit", *QUIET, "--trainer.strategy=ddp",
        "--trainer.devices=2", "--trainer.max_epochs=1000", "--early_stopping.patience=1000",
    ]  # fmt: skip
    log = tmp_path / "fit.log"
    tree = []
    with adopting_orphans(), log.open("w") as out:
        rank_0 = subprocess.Popen(fit, cwd=tmp_path, env=process_environment(), stdout=out, stderr=out)
        try:
            # Both ranks are training once the first epoch's checkpoint exists.
            last = tmp_path / "runs/tiny/version_0/checkpoints/last.ckpt"
            wait_for(lambda: last.exists() or rank_0.poll() is not None, 300, "the first epoch")
            assert rank_0.poll() is None, log.read_text()[-3000:]
            tree = [psutil.Process(rank_0.pid), *psutil.Process(rank_0.pid).children(recursive=True)]
            rank_1 = next(p for p in tree if p.environ().get("LOCAL_RANK") == "1")

            (tree[0] if victim == 0 else rank_1).send_signal(signal.SIGKILL)
            codes = {0: rank_0.wait(timeout=DEADLINE)}
            if victim == 0:  # rank 1, orphaned by rank 0's death and adopted: its exit code reaches this process
                codes[1] = wait_for_exit(rank_1.pid, DEADLINE)
            # (A killed rank 1 stays rank 0's child: its status goes to rank 0, not here.)
            wait_for(lambda: not [p for p in tree[1:] if exit_code(p.pid) is None and running(p)], DEADLINE,
                     "every process of the job to end")  # fmt: skip
        finally:
            for process in reversed(tree or [psutil.Process(rank_0.pid)]):
                if running(process):
                    process.kill()  # only if an assertion failed: leave nothing behind
            rank_0.wait()
            for process in tree[1:]:
                exit_code(process.pid)
    survivor = 1 - victim
    assert codes[survivor] != 0, log.read_text()[-3000:]  # it noticed the lost peer and failed by itself
    if victim == 0:
        assert codes[0] == -signal.SIGKILL
