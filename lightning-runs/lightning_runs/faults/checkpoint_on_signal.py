"""CheckpointOnSignal: SIGTERM (a scheduler's preemption) and Ctrl-C finish the batch, save the last checkpoint and exit
143 or 130, at a point a resume continues bit for bit.

    Trainer(callbacks=[LastCheckpoint(filename="last"), CheckpointOnSignal()])
"""

import signal

import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_warn

from lightning_runs.checkpoints.last_checkpoint import last_checkpoint_path, last_part, ran_to_its_end
from lightning_runs.errors import Stopped, Terminated
from lightning_runs.private import signal_launched_ranks
from lightning_runs.signals import PYTHON_DEFAULTS

NOT_FOUND = 'trainer.fit(ckpt_path="last") may look for what it saves in a new logger version\'s folder, not there'


class CheckpointOnSignal(Callback):
    """On SIGTERM or a first Ctrl-C: finish the batch, save the last checkpoint, stop (Stopped: exit 143 or 130). A
    second Ctrl-C stops at once.

    Lightning's own SIGTERM handling stops where a checkpoint would not resume cleanly (mid-validation) and exits 0;
    its Ctrl-C saves nothing. Here the stop comes at the end of a training batch that steps (inside an accumulation
    window, the summed gradients are in no checkpoint), or, asked for in an epoch's last batch or its validation, at
    that epoch's end after its validation and checkpoints; every rank agrees on which batch.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def setup(self, trainer, pl_module, stage: str) -> None:
        if stage == "fit" and last_part(trainer) is None:  # (LastCheckpoint says what it lacks itself)
            rank_zero_warn(f'CheckpointOnSignal without LastCheckpoint(filename="last") in the callbacks: {NOT_FOUND}')

    def on_train_start(self, trainer, pl_module) -> None:
        self._requested, self._deferred = 0, 0
        self._launcher = trainer.strategy.launcher
        # Installed after Lightning's SIGTERM handler (Trainer.fit registers it); both put back at teardown.
        self._previous = {signum: signal.signal(signum, self._on_signal) for signum in self.SIGNALS}

    def _on_signal(self, signum, frame) -> None:
        if self._requested == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt  # the second Ctrl-C: the user does not want to wait for the batch
        self._requested = signum
        signal_launched_ranks(self._launcher, signum)  # the ranks Lightning started itself have not seen it

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        requested = self._agreed(trainer, pl_module)
        if not requested:
            return
        if batch_idx + 1 >= trainer.num_training_batches:  # the epoch's validation has not run: stop at its end
            self._deferred, trainer.should_stop = requested, True
        elif (batch_idx + 1) % trainer.accumulate_grad_batches == 0:
            self._stop(trainer, requested, save=True)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        # Asked for during this epoch's validation: the stop comes at the epoch's end, after its checkpoints.
        requested = self._agreed(trainer, pl_module)
        if requested and not self._deferred:
            self._deferred, trainer.should_stop = requested, True

    def _agreed(self, trainer, pl_module) -> int:
        requested = getattr(self, "_requested", 0)
        if trainer.world_size > 1:  # the same decision on every rank, or the others would wait in a collective
            requested = int(trainer.strategy.reduce(torch.tensor(requested, device=pl_module.device), reduce_op="max"))
        return requested

    def on_train_end(self, trainer, pl_module) -> None:
        if self._deferred:  # the epoch's validation and checkpoints have run
            self._stop(trainer, self._deferred, save=False)

    def _stop(self, trainer, requested: int, save: bool) -> None:
        path = last_checkpoint_path(trainer)
        if save:
            trainer.save_checkpoint(path)
        said = f"stopped by {'SIGTERM' if requested == signal.SIGTERM else 'Ctrl-C'} at step {trainer.global_step}"
        if ran_to_its_end(trainer):
            raise Stopped(requested, f"{said}; saved {path}; the run had finished its last epoch")
        raise Stopped(requested, f'{said}; saved {path}; resume with trainer.fit(..., ckpt_path="last")')

    def on_fit_end(self, trainer, pl_module) -> None:
        # Asked for after the last batch (the fit's final saves): no batch is left to stop at.
        if getattr(self, "_requested", 0) and not self._deferred:
            raise Terminated() if self._requested == signal.SIGTERM else KeyboardInterrupt

    def on_exception(self, trainer, pl_module, exception) -> None:
        self.teardown(trainer, pl_module, "fit")  # Lightning skips teardown when the fit raised

    def teardown(self, trainer, pl_module, stage: str) -> None:
        for signum, handler in getattr(self, "_previous", {}).items():
            # None: a handler set outside Python, which cannot be put back; Python's own instead.
            signal.signal(signum, PYTHON_DEFAULTS[signum] if handler is None else handler)
        self._previous = {}
