"""GradientCheck: `train/grad_norm` each logged step, and a stop (Diverged) at the first NaN/Inf gradient, before the
optimizer applies it.

    Trainer(callbacks=[GradientCheck()])
"""

import torch
from jsonargparse.typing import PositiveFloat
from lightning.pytorch.callbacks import Callback

from lightning_runs.distributed import whole
from lightning_runs.errors import Diverged


class GradientCheck(Callback):
    """The norm of all gradients together, once per optimizer step, after mixed precision unscales them and before
    clipping (the norm `Trainer(gradient_clip_val=...)` compares); DDP has averaged them, so every rank stops at the
    same step. Lightning alone would train NaN weights, save them and exit 0. With a float16 loss scaler, overflowing
    steps are skipped by the scaler; a scale below `min_loss_scale` means divergence. Works with manual optimization
    too (Lightning calls the hook from `optimizer.step()`)."""

    def __init__(self, norm_type: PositiveFloat = 2.0, min_loss_scale: PositiveFloat = 1e-4) -> None:
        self.norm_type, self.min_loss_scale = norm_type, min_loss_scale
        self._first_bad = None

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if not grads:
            return
        # torch's own total norm (one foreach kernel), left on the device until a logger writes it.
        total = whole(torch.nn.utils.get_total_norm(grads, self.norm_type))  # under FSDP, every rank's shards
        if trainer.global_step % trainer.log_every_n_steps == 0:
            for logger in trainer.loggers:  # straight to the loggers: `self.log` costs ~1 ms of bookkeeping a call
                logger.log_metrics({"train/grad_norm": total}, step=trainer.global_step)
        scaler = getattr(trainer.precision_plugin, "scaler", None)
        if scaler is not None:
            if scaler.get_scale() < self.min_loss_scale:
                raise Diverged(
                    f"step {trainer.global_step}: the float16 loss scale fell to {scaler.get_scale():.1e}, every step"
                    ' overflows; lower the learning rate or use Trainer(precision="bf16-mixed") or 32'
                )
        else:
            # On a GPU, reading the verdict every step would stall the queue: the first bad step is kept on the device
            # and read at each logged step and at the epoch's end, before any checkpoint is written; on a CPU, at once.
            step = torch.tensor(float(trainer.global_step), device=total.device)
            bad = torch.where(torch.isfinite(total), torch.inf, step)
            self._first_bad = bad if self._first_bad is None else self._first_bad.minimum(bad)
            if total.device.type == "cpu" or trainer.global_step % trainer.log_every_n_steps == 0:
                self._check()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._check()

    def _check(self) -> None:
        if self._first_bad is not None and torch.isfinite(self._first_bad):
            raise Diverged(
                f"step {int(self._first_bad)}: the loss or its gradients are NaN/Inf, stopped before they reached the"
                " weights; lower the learning rate or set Trainer(gradient_clip_val=...)"
            )
