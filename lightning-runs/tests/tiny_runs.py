"""Running the library's tiny tasks (tiny_tasks.py) as a user types them, and reading what a run did: in this process
(`run`), as a process of its own (`command`, `start`: `python -m tiny_tasks`, and `wait_for` what it does; a fit to be
killed, forked: `exit_status`), a refusal's one line, the files a command kept, a checkpoint's data and a run's
TensorBoard scalars; which cases of a matrix run every day (`slow_repeats`); and a sweep's parse of its trials' config
made once for the same options (`printed_once`).
"""

import contextlib
import functools
import os
import signal
import subprocess
import threading
import time
import traceback
from collections.abc import Sequence

import pytest
import torch
from lightning.pytorch.callbacks import Callback

from lightning_runs.testing import refusal  # noqa: F401 - the one copy, for the tests that import it from here
from tiny_tasks import cli_main

# Running the tiny task as a user types it. In this process: `run`; as a process of its own (`python -m tiny_tasks`,
# the block below), where Lightning starts processes itself (DDP) or a test reads what the process printed: `command`.
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


def run(subcommand: str, *args: str, callbacks: Sequence[Callback] = (), cli=cli_main):
    """`python -m tiny_tasks <subcommand> <args>` without progress bars, in this process: the CLI object, or
    SystemExit with its exit code. `cli`: another tiny task's cli_main (tiny_networks.cli_main)."""
    from lightning_runs.errors import main

    return main(lambda: cli([subcommand, *QUIET, *args], callbacks=callbacks))


PRINTED: dict[tuple[str, ...], tuple[str, object]] = {}


@functools.wraps(cli_main)  # its module too: a trial is `python -m <that package> fit`
def printed_once(args: list[str], callbacks=()):
    """tiny_tasks' cli_main, whose `fit ... --print_config` (a sweep's parse of its trials' config before it opens its
    study, ~0.2-0.5 s a parse) prints again what it printed for the same options in this process; a refusal is never
    kept, and every other command runs. For the tests of what a sweep refuses after that parse."""
    if args[-1:] != ["--print_config"]:
        return cli_main(args, callbacks=callbacks)
    if tuple(args) not in PRINTED:
        import io

        out, code = io.StringIO(), None
        with contextlib.redirect_stdout(out):
            try:
                cli_main(args, callbacks=callbacks)
            except SystemExit as exit:
                if exit.code not in (0, None):
                    raise
                code = exit.code
        PRINTED[tuple(args)] = out.getvalue(), code
    text, code = PRINTED[tuple(args)]
    print(text, end="")
    raise SystemExit(code)


def process_environment() -> dict[str, str]:
    """This environment without a launcher's variables (the tests may run under SLURM or torchrun), one thread a
    process (the ranks share the cores), and this folder importable (`tiny_tasks`, class paths such as
    `lightning_runs.testing.CrashAt`) before whatever PYTHONPATH already gives."""
    import os
    from pathlib import Path

    launcher = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT"}
    clean = {k: v for k, v in os.environ.items() if k not in launcher and not k.startswith(("SLURM_", "TORCHELASTIC_"))}
    path = os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))
    return {**clean, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}


def finished(capfd, command) -> subprocess.CompletedProcess:
    """`command()` run in this process and told as a finished process tells it: its exit code (its SystemExit's, else
    0) and what it and the processes it started printed. For a tool whose fits are processes either way (cv, verify):
    the tool's own process is not what the test is about."""
    capfd.readouterr()
    threads = torch.get_num_threads()
    try:
        command()
        code = 0
    except SystemExit as exit:
        code = exit.code
    finally:
        torch.set_num_threads(threads)  # verify sets its fits' thread count in the process it runs in
    return subprocess.CompletedProcess([], code, *capfd.readouterr())


# Threads a fork may copy: tqdm's monitor wakes every 10 s holding only tqdm's lock, which a fit without a progress
# bar never takes.
HARMLESS_THREADS = {"MainThread", "tqdm_monitor"}


def exit_status(*args: str) -> int:
    """`fit <args>` in a process of its own, its exit status as subprocess gives it (-9: killed with -9)."""
    return forked(lambda: run("fit", *args), lambda: command("fit", *QUIET, *args).returncode)


def forked(fit, fallback) -> int:
    """`fit()` in a process forked from this one, its exit status as subprocess gives it, where it can be (`can_fork`: a
    fresh interpreter spends seconds importing Lightning before its first step); else `fallback()`, the same fit as a
    fresh process, its exit status."""
    if not can_fork():
        return fallback()
    process, deadline = Forked(fit), time.monotonic() + 120
    while process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            raise TimeoutError("the forked fit ran past 120 s")
        time.sleep(0.01)
    return process.returncode


def can_fork() -> bool:
    """No other thread could hold a lock the forked child would wait for, and torch runs one thread (`make test`'s
    OMP_NUM_THREADS=1): after an OpenMP team of two, a forked child's first parallel op hung (measured, torch 2.14)."""
    return torch.get_num_threads() == 1 and not {thread.name for thread in threading.enumerate()} - HARMLESS_THREADS


class Forked:
    """`fit()` in a process forked from this one, used as the tests use a subprocess.Popen: pid, poll, kill, wait and
    returncode (-9: killed with -9)."""

    def __init__(self, fit) -> None:
        self.returncode = None
        self.pid = os.fork()
        if self.pid == 0:  # the child: the fit, then out without running this process's exit handlers or pytest's
            code = 1
            try:
                fit()
                code = 0
            except SystemExit as exit:  # run's exit status, as a process gives it
                code = exit.code if isinstance(exit.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)

    def poll(self) -> int | None:
        if self.returncode is None and (ended := os.waitpid(self.pid, os.WNOHANG))[0] == self.pid:
            self.returncode = os.waitstatus_to_exitcode(ended[1])
        return self.returncode

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float = 120) -> int:
        wait_for(lambda: self.poll() is not None, timeout, what=f"the forked fit {self.pid} to end")
        return self.returncode


def started_fit(*args: str):
    """`fit <args>` in the background, in a process of its own: forked from this one where it can be (`Forked`), else
    `python -m tiny_tasks` (a subprocess.Popen). What it prints goes to this process's output, which pytest shows on a
    failure."""
    return Forked(lambda: run("fit", *args)) if can_fork() else start("fit", *QUIET, *args)


def command(*args: str, timeout: float = 300, cwd=None):
    """`python -m tiny_tasks <args>` as a process: its subprocess.CompletedProcess, output as text."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "tiny_tasks", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=process_environment())


def start(*args: str, cwd=None):
    """`python -m tiny_tasks <args>` in the background: its subprocess.Popen, pipes as text."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "tiny_tasks", *args]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    return subprocess.Popen(argv, cwd=cwd, env=process_environment(), **pipes)


def wait_for(condition, timeout: float = 120, what: str = "condition", every: float = 0.01) -> None:
    """Poll `condition()` every `every` seconds until it holds; TimeoutError naming `what` after `timeout` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {timeout} s")
        time.sleep(every)


# What a command did to the files and what its run wrote, for the tests that refuse, stop and resume runs.


def snapshot(root=".") -> dict[str, str]:
    """Every file under `root` (relative path -> sha256): taken before and after a command, what it did to them."""
    import hashlib
    from pathlib import Path

    files = (path for path in Path(root).rglob("*") if path.is_file())
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


def assert_kept(before: dict[str, str], after: dict[str, str], runs_root: str = "runs") -> set[str]:
    """No file that existed changed or went, and no file appeared outside `runs_root`; returns the new files."""
    from pathlib import Path

    assert {p: d for p, d in after.items() if p in before} == before, "an existing file changed or went"
    new = set(after) - set(before)
    outside = [p for p in new if not Path(p).is_relative_to(runs_root)]
    assert not outside, f"written outside {runs_root}/: {outside}"
    return new


def load(path) -> dict:
    """A checkpoint as plain data: a file, or a sharded fit's folder read whole (lightning_runs.checkpoints.sharded)."""
    from pathlib import Path

    from lightning_runs.checkpoints.sharded import consolidated

    return consolidated(Path(path)) if Path(path).is_dir() else torch.load(path, map_location="cpu", weights_only=True)


def same(a, b) -> bool:
    """Equal all the way down, tensors bit for bit."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def assert_same_checkpoint(a: dict, b: dict) -> None:
    """Weights, optimizer, scheduler and callback states equal bit for bit (RNG states included)."""
    assert a["global_step"] == b["global_step"] and a["epoch"] == b["epoch"]
    for key in a["state_dict"]:
        assert torch.equal(a["state_dict"][key], b["state_dict"][key]), key
    assert same(a["optimizer_states"][0]["state"], b["optimizer_states"][0]["state"]), "the optimizer state"
    assert a["lr_schedulers"] == b["lr_schedulers"]
    assert a["callbacks"].keys() == b["callbacks"].keys()
    for key in a["callbacks"]:
        assert same(a["callbacks"][key], b["callbacks"][key]), key


def scalars(run_dir, tag: str) -> list[tuple[int, float]]:
    """(step, value) of every `tag` event a run's TensorBoard files hold (size_guidance 0: all, not a sample)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    return [(event.step, event.value) for event in events.Scalars(tag)]


def slow_repeats(cases: list, ids: list[str], repeats: dict[str, str]) -> list:
    """`cases` as pytest params named by `ids`. Every day each case that exercises a path of its own; marked slow,
    each case that repeats one (`repeats`: its id -> the id of the everyday case whose path it takes with other
    values, or the node id of a test elsewhere that takes it every day)."""
    for slow, everyday in repeats.items():
        assert slow in ids and (everyday in set(ids) - set(repeats) or "::" in everyday), (slow, everyday)
    params = []
    for case, id in zip(cases, ids, strict=True):
        values = case if isinstance(case, tuple) else (case,)
        params.append(pytest.param(*values, id=id, marks=[pytest.mark.slow] if id in repeats else []))
    return params


def epochs_processed(checkpoint: dict) -> int:
    """Training epochs the saved run finished, validation and all (the fit loop's progress: a checkpoint's `epoch` is
    the same for a save at an epoch's end and one in its middle)."""
    return checkpoint["loops"]["fit_loop"]["epoch_progress"]["current"]["processed"]


@contextlib.contextmanager
def immutable(folder):
    """chattr +i: EPERM for every user, root included (the read-only mount's other half)."""
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"chattr +i {folder}: {done.stderr.strip() or 'not permitted here'}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
