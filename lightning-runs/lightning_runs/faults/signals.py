"""Runs stopped by SIGTERM or Ctrl-C stop cleanly, with a checkpoint to resume from."""

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint

from lightning_runs.console import program
from lightning_runs.errors import Stopped, Terminated
from lightning_runs.private import signal_launched_ranks

# What a Python program starts with: Ctrl-C raises KeyboardInterrupt, SIGTERM ends the process.
PYTHON_DEFAULTS = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}


class CheckpointOnSignal(Callback):
    """On SIGTERM (what schedulers send before preempting) or a first Ctrl-C: finish the batch, save the last
    checkpoint, stop with exit code 143 or 130 (inside a gradient-accumulation window: once the window has stepped).
    A second Ctrl-C stops at once.

    Lightning's own SIGTERM handling raises at points where a checkpoint would not resume cleanly (mid-validation,
    or between validation and the epoch's end) and exits 0; its Ctrl-C saves nothing and exits 1. This stops only at
    the end of a training batch, where Lightning's step checkpoints are taken and resume exactly, or, asked for during
    an epoch's last batch or its validation, at the end of that epoch after its validation and checkpoints (the final
    epoch's too); all ranks agree on which batch. Outside the training loop: `terminated_outside_training`.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def on_train_start(self, trainer, pl_module) -> None:
        self._requested: int | None = None
        self._deferred = 0  # a stop asked for in an epoch's last training batch or its validation: at the epoch's end
        self._launcher = trainer.strategy.launcher
        # SIGTERM: installed after Lightning's handler (Trainer.fit registers it). Both restored at teardown.
        self._previous = {signum: signal.signal(signum, self._on_signal) for signum in self.SIGNALS}

    def _on_signal(self, signum, frame) -> None:
        if self._requested == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt  # the second Ctrl-C: the user does not want to wait for the batch
        self._requested = signum
        signal_launched_ranks(self._launcher, signum)  # the ranks Lightning started itself have not seen the signal

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        requested = self._agreed(trainer, pl_module)
        if not requested:
            return
        # At an epoch's last training batch the epoch's validation has not run: a checkpoint taken here resumed past
        # it (that validation was skipped, and early stopping then found no val metric at the next stop). The stop
        # waits for the epoch's end instead: Lightning's own `should_stop` runs its validation and its checkpoints
        # (best.ckpt, last.ckpt) and ends the fit there; on_train_end then says so.
        if batch_idx + 1 >= trainer.num_training_batches:
            self._deferred, trainer.should_stop = requested, True
            return
        # Inside a gradient-accumulation window the gradients summed so far are in no checkpoint: saved here, the
        # resumed run would step on the window's later batches alone. The stop waits for the batch that steps
        # (at most accumulate_grad_batches - 1 more), where the checkpoint resumes bit for bit.
        if (batch_idx + 1) % trainer.accumulate_grad_batches:
            return
        self._stop(trainer, requested, save=True)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        # Asked for during this epoch's validation: the stop comes at the epoch's end, as for its last batch (this
        # hook runs before the checkpoints' own). A checkpoint taken mid-validation would resume with part of it.
        requested = self._agreed(trainer, pl_module)
        if requested and not self._deferred:
            self._deferred, trainer.should_stop = requested, True

    def _agreed(self, trainer, pl_module) -> int:
        requested = self._requested or 0
        if trainer.world_size > 1:  # the same decision on every rank, or the others would wait in a collective
            requested = int(trainer.strategy.reduce(torch.tensor(requested, device=pl_module.device), reduce_op="max"))
        return requested

    def on_train_end(self, trainer, pl_module) -> None:
        if self._deferred:  # the epoch's validation and checkpoints have run: resumable from its end
            self._stop(trainer, self._deferred, save=False)

    def _stop(self, trainer, requested: int, save: bool) -> None:
        path = last_checkpoint_path(trainer)
        if save:
            trainer.save_checkpoint(path)
        name = "SIGTERM" if requested == signal.SIGTERM else "Ctrl-C"
        said = f"stopped by {name} at step {trainer.global_step}; saved {path}"
        # Exited as any stop (a scheduler reads 143) even when the last epoch had run out: there is nothing to resume.
        then = "the run had finished its last epoch" if ran_to_its_end(trainer) else "resume with --ckpt_path last"
        raise Stopped(requested, f"{said}; {then}")

    def on_fit_end(self, trainer, pl_module) -> None:
        # Asked for after the last batch's checks (the fit's end, its final saves): no batch is left to stop at, and
        # the flag alone would exit 0. The entry point says what was saved (terminated_line); on_exception restores
        # the handlers.
        requested = getattr(self, "_requested", None)
        if requested and not self._deferred:
            raise Terminated() if requested == signal.SIGTERM else KeyboardInterrupt

    def on_exception(self, trainer, pl_module, exception) -> None:
        # Lightning skips the teardown hooks when the fit raised (this callback's own Stopped too): left installed,
        # the handler would swallow the next command's Ctrl-C in the same process (a notebook, a test).
        self.teardown(trainer, pl_module, "fit")

    def teardown(self, trainer, pl_module, stage: str) -> None:
        for signum, handler in getattr(self, "_previous", {}).items():
            # None: a handler set outside Python, which cannot be put back. Python's own takes its place: left
            # installed, this one would swallow a Ctrl-C in the test after the fit (only a flag, nobody reads it).
            signal.signal(signum, PYTHON_DEFAULTS[signum] if handler is None else handler)
        self._previous = {}


def ran_to_its_end(trainer) -> bool:
    """Whether the fit trained all it was asked to: its epochs, or its steps (a stop asked for on the way sets
    `should_stop` too, so Lightning's own "done" cannot tell)."""
    epochs = trainer.max_epochs not in (None, -1) and trainer.current_epoch >= trainer.max_epochs
    return epochs or (trainer.max_steps not in (None, -1) and trainer.global_step >= trainer.max_steps)


@contextmanager
def terminated_outside_training() -> Iterator[None]:
    """SIGTERM raises Terminated wherever the program is while this lasts: parsing, setting up, `test`, `predict`,
    the test after a fit. Inside the training loop CheckpointOnSignal's handler takes over, and Lightning's (it
    registers its own around each Trainer call) calls this one after its own.

    Without it a SIGTERM between the run folder's claim and the Trainer killed the process at once and left an empty
    version folder; Lightning's handler only marks it (`trainer.received_sigterm`), which validation, test and
    predict never read: they ran on and exited 0.
    """
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
def sigterm_held() -> Iterator[None]:
    """A SIGTERM while this lasts is raised as it ends: a step such as claiming the run folder is never cut between
    making the folder and recording it for removal. (Blocking the signal itself would not do: any thread may take
    it, and Python runs its handler in the main thread whichever did.)"""
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


def terminated_line(subcommand: str | None, trainer, testing_best: str | None) -> str:
    """What a SIGTERM outside the training loop stopped and left, for the line the entry point says."""
    if testing_best:
        return (
            f"stopped by SIGTERM while testing {testing_best}; the fit had finished and saved its checkpoints;"
            f" test it with: {program()} test --ckpt_path {testing_best}"
        )
    if trainer is None or subcommand is None:
        return "stopped by SIGTERM before the run started; nothing was written"
    if subcommand == "fit" and trainer.global_step:  # after the training loop: its end, or the final saves
        return (
            f"stopped by SIGTERM after training, at step {trainer.global_step}; its checkpoints are saved (resume"
            " with --ckpt_path last where epochs remain)"
        )
    if subcommand == "fit":
        return "stopped by SIGTERM before training started; nothing new was saved: run the same command again"
    return f"stopped by SIGTERM during {subcommand}; nothing was written: run the same command again"


def last_checkpoint_path(trainer) -> Path:
    """Where the un-monitored ModelCheckpoint (the run's `last`) writes, under the name it is configured with."""
    saving = [c for c in trainer.checkpoint_callbacks if isinstance(c, ModelCheckpoint) and c.dirpath]
    last = next((c for c in saving if c.monitor is None), None)
    if last is None:
        folder = Path(saving[0].dirpath) if saving else Path(trainer.default_root_dir) / "checkpoints"
        return folder / f"last{ModelCheckpoint.FILE_EXTENSION}"
    return Path(last.format_checkpoint_name({}))
