"""Stopping a run as the world would, for your own tests of resume and stops: a crash (CrashAt) or a signal (SignalAt)
at a given step, batch or phase, and `refusal`, a command's one-line error. The callbacks are named by a config too:
`--trainer.callbacks+=lightning_runs.testing.CrashAt --trainer.callbacks.step=5`."""

import os
import signal

from lightning.pytorch.callbacks import Callback


class CrashAt(Callback):
    """Raises as the given global step begins, as a crash would stop a run."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step == self.step:
            raise RuntimeError(f"crash at step {self.step}")


class SignalAt(Callback):
    """Sends this process a signal (SIGTERM by default) as the given global step begins, as a scheduler would; with
    `phase` validation, test or predict, as that phase's first batch begins at that global step (None: at any; the
    sanity check does not count); with `phase` fit_end, after the training loop. `batch` instead of a step: the
    training batch of the fit (counted over its epochs) as it begins, for gradient accumulation, where a step spans
    several. A SIGKILL first waits for the background checkpoint writer (its teardown waits for the writes it holds):
    what is on disk is then everything saved before this point, the hardest case to resume."""

    def __init__(self, step: int | None = None, signum: int = 15, phase: str = "train", batch: int | None = None):
        self.step, self.signum, self.phase, self.batch = step, signum, phase, batch

    def _at(self, trainer, phase: str, batch_idx: int) -> None:
        if self.batch is not None:
            if phase == "train" and trainer.current_epoch * trainer.num_training_batches + batch_idx == self.batch:
                self._send(trainer)
            return
        first = phase == "train" or batch_idx == 0
        if phase == self.phase and first and not trainer.sanity_checking and self.step in (None, trainer.global_step):
            self._send(trainer)

    def _send(self, trainer) -> None:
        if self.signum == signal.SIGKILL:
            getattr(trainer.strategy.checkpoint_io, "teardown", lambda: None)()
        os.kill(os.getpid(), self.signum)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self._at(trainer, "train", batch_idx)

    def on_fit_end(self, trainer, pl_module) -> None:
        if self.phase == "fit_end":
            self._send(trainer)

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0) -> None:
        self._at(trainer, "validation", batch_idx)

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0) -> None:
        self._at(trainer, "test", batch_idx)

    def on_predict_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0) -> None:
        self._at(trainer, "predict", batch_idx)


def refusal(capsys, command, code: int = 2) -> str:
    """Run `command()` under pytest, expecting the exit `code` with one `error:` line and no traceback; that line."""
    import pytest

    with pytest.raises(SystemExit) as exit_:
        command()
    err = capsys.readouterr().err
    assert exit_.value.code == code, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    return errors[0]
