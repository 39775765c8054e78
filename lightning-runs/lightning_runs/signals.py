"""SIGTERM and Ctrl-C as the library handles them outside the training loop: Python's own handlers to put back, SIGTERM
raised as Terminated wherever the program is, and held while a write must not be cut."""

import signal
import threading
from collections.abc import Generator
from contextlib import contextmanager

from lightning_runs.errors import Terminated

STOPS = (signal.SIGTERM, signal.SIGINT)
# What a Python program starts with: Ctrl-C raises KeyboardInterrupt, SIGTERM ends the process.
PYTHON_DEFAULTS = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}


@contextmanager
def terminated_outside_training() -> Generator[None, None, None]:
    """SIGTERM raises Terminated wherever the program is while this lasts (parsing, set-up, test, predict); inside the
    training loop CheckpointOnSignal takes over. Lightning's own handler only marks it, which validate, test and
    predict never read: they ran on and exited 0."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set a handler
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Held:
    depth, pending = 0, False


@contextmanager
def sigterm_held() -> Generator[None, None, None]:
    """A SIGTERM while this lasts is raised as it ends: making a run folder is never cut before it is recorded."""
    _Held.depth += 1
    try:
        yield
    finally:
        _Held.depth -= 1
        if not _Held.depth and _Held.pending:
            _Held.pending = False
            raise Terminated()


def _raise_terminated(signum, frame) -> None:
    if _Held.depth:
        _Held.pending = True
    else:
        raise Terminated()
