"""Runs that go wrong stop cleanly: on a non-finite loss, and on SIGTERM (preemption) with a checkpoint."""

import signal
from pathlib import Path

import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.utilities.exceptions import SIGTERMException

SIGTERM_EXIT_CODE = 128 + signal.SIGTERM  # what shells report for a process ended by SIGTERM


class StopOnNonFinite(Callback):
    """Stops at the first step whose gradients are NaN or infinite, before the optimizer applies them.

    Gradients, not the loss: DDP has already averaged them over ranks, so every rank sees the same verdict at
    the same step (a rank-local loss check would leave the other ranks waiting in the next all-reduce).
    Lightning alone would keep training NaN weights, save them and exit 0. With a float16 loss scaler,
    overflowing steps are normal and skipped by the scaler; a scale that keeps collapsing means divergence.
    """

    def __init__(self, min_loss_scale: float = 1e-4) -> None:
        self.min_loss_scale = min_loss_scale

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        scaler = getattr(trainer.precision_plugin, "scaler", None)
        if scaler is not None:
            if scaler.get_scale() < self.min_loss_scale:
                raise FloatingPointError(
                    f"step {trainer.global_step}: the float16 loss scale fell to {scaler.get_scale():.1e}, every step"
                    " overflows; lower --model.lr or use --trainer.precision bf16-mixed or 32"
                )
            return
        grads = [p.grad for p in pl_module.parameters() if p.grad is not None]
        if grads and not torch.isfinite(torch.nn.utils.get_total_norm(grads)):  # NaN or Inf anywhere makes it so
            raise FloatingPointError(
                f"step {trainer.global_step}: the loss or its gradients are NaN/Inf, stopped before they reached"
                " the weights; lower --model.lr or set --trainer.gradient_clip_val"
            )


class CheckpointOnSigterm(Callback):
    """On SIGTERM, what schedulers send before preempting: finish the batch, save `last.ckpt`, exit 143.

    Lightning's own handling raises at points where a checkpoint would not resume cleanly (mid-validation, or
    between validation and the epoch's end) and exits 0. This stops only at the end of a training batch, the
    point where Lightning's step checkpoints are taken and resume exactly; all ranks agree on which batch.
    """

    def on_train_start(self, trainer, pl_module) -> None:
        self._requested = False
        self._launcher = trainer.strategy.launcher
        # Installed after Lightning's handler (Trainer.fit registers it), restored by Lightning at teardown.
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum, frame) -> None:
        self._requested = True
        if self._launcher is not None and hasattr(self._launcher, "kill"):
            self._launcher.kill(signum)  # the ranks Lightning started itself have not seen the signal

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        stop = self._requested
        if trainer.world_size > 1:
            stop = trainer.strategy.reduce_boolean_decision(stop, all=False)
        if not stop:
            return
        path = _last_checkpoint_path(trainer)
        trainer.save_checkpoint(path)
        raise SIGTERMException(
            f"stopped by SIGTERM at step {trainer.global_step}; saved {path}; resume with --ckpt_path last"
        )


def _last_checkpoint_path(trainer) -> Path:
    folders = [Path(c.dirpath) for c in trainer.checkpoint_callbacks if isinstance(c, ModelCheckpoint) and c.dirpath]
    folder = folders[0] if folders else Path(trainer.default_root_dir) / "checkpoints"
    return folder / "last.ckpt"
