"""Fits run as child processes (a sweep's trials, a CV's folds), a few at a time: a stop signal passed on to each
running one once, none started after it, and none outliving this process, even one killed with -9."""

import ctypes
import os
import signal
import subprocess
import sys
import time

from lightning_runs.signals import PYTHON_DEFAULTS, STOPS

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def run_processes(commands: list[list[str]], env: dict[str, str], workers: int = 1, logs=None, ended=None):
    """Run `commands` (a sweep's trial, a CV's folds), up to `workers` at once, each to its end: their exit codes (None
    for those never started), and the stop signal (SIGTERM, SIGINT) received meanwhile, if any. The signal is passed on
    to those running, which save their last checkpoint and exit 143 or 130; no other starts then. `logs`: a file path
    per command for its output (else this terminal's); `ended(i, code)` as each ends.

    Each runs in a process group of its own, so that a Ctrl-C in the terminal reaches it once, through this process
    (twice would be the "stop at once" second Ctrl-C); and it gets SIGTERM when this process dies, even by kill -9,
    so that none outlives it.
    """
    codes: list[int | None] = [None] * len(commands)
    running: dict[int, subprocess.Popen] = {}
    received: list[int] = []

    def forward(signum, frame) -> None:
        received.append(signum)
        for child in running.values():
            child.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in STOPS}  # before any start: no signal is lost
    queue = list(range(len(commands)))
    try:
        while running or (queue and not received):
            while queue and len(running) < workers and not received:
                i = queue.pop(0)
                output: dict = {} if logs is None else {"stdout": open(logs[i], "ab"), "stderr": subprocess.STDOUT}  # noqa: SIM115
                running[i] = subprocess.Popen(commands[i], env=env, preexec_fn=_end_with_parent(os.getpid()), **output)
                if received:  # came between the check and the start
                    running[i].send_signal(received[0])
            for i, child in list(running.items()):
                if child.poll() is not None:
                    codes[i] = running.pop(i).returncode  # Popen keeps no log file: `output` closed it
                    if ended:
                        ended(i, codes[i])
            time.sleep(0.05)
    finally:
        for signum, handler in previous.items():  # None: set outside Python, not restorable; Python's own instead
            signal.signal(signum, PYTHON_DEFAULTS[signum] if handler is None else handler)
    return codes, (received[0] if received else None)


def stop_signal(code: int | None) -> int | None:
    """The stop signal an exit code reports: 143/130 from the process's own handler, -15/-2 if it had none yet."""
    return next((signum for signum in STOPS if code in (128 + signum, -signum)), None)


def _end_with_parent(parent: int):
    # Resolved here, in the parent: between fork and exec the child should only call, not load (threads, such as
    # Optuna's heartbeat, may hold locks that a load would wait for). PR_SET_PDEATHSIG fires when the thread that
    # forked exits: the parent starts them from its main thread, which lives as long as it does.
    prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None

    def in_child() -> None:
        os.setpgid(0, 0)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
            if os.getppid() != parent:  # the parent died before the line above: nobody will send the signal
                os.kill(os.getpid(), signal.SIGTERM)

    return in_child
