"""A run whose gradients turn NaN or Inf stops at that step, before the optimizer applies them."""

import torch
from jsonargparse.typing import PositiveFloat
from lightning.pytorch.callbacks import Callback

from lightning_runs.distributed import whole
from lightning_runs.errors import Diverged


class GradientCheck(Callback):
    """`train/grad_norm`, the norm of all gradients together, computed once per optimizer step; the run stops at the
    first step where it is NaN or infinite, before the optimizer applies it.

    Lightning calls `on_before_optimizer_step` after mixed precision unscales the gradients and before it clips
    them (`--trainer.gradient_clip_val`): this is the norm the clipping threshold is compared with. Gradients, not
    the loss: DDP has already averaged them, so every rank reaches the same verdict at the same step (a rank-local
    loss check would leave the other ranks waiting in the next all-reduce). Lightning alone would keep training NaN
    weights, save them and exit 0. With a float16 loss scaler, overflowing steps are normal and skipped by the
    scaler; a scale that keeps collapsing (below `min_loss_scale`) means divergence.
    """

    def __init__(self, norm_type: PositiveFloat = 2.0, min_loss_scale: PositiveFloat = 1e-4) -> None:
        self.norm_type, self.min_loss_scale = norm_type, min_loss_scale

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        grads = [p.grad for p in pl_module.parameters() if p.grad is not None]
        if not grads:
            return
        # torch's own total norm (one foreach kernel), left on the device until the logger writes it; Lightning's
        # `grad_norm` utility would read every parameter's norm back to the host, one GPU sync each.
        total = whole(torch.nn.utils.get_total_norm(grads, self.norm_type))  # under FSDP, each rank's shards summed
        if trainer.global_step % trainer.log_every_n_steps == 0:
            # Straight to the loggers (they write on rank zero only), at the step Lightning gives this batch's
            # loss: `self.log` would cost close to a millisecond of Lightning's bookkeeping every step.
            for logger in trainer.loggers:
                logger.log_metrics({"train/grad_norm": total}, step=trainer.global_step)
        scaler = getattr(trainer.precision_plugin, "scaler", None)
        if scaler is not None:
            if scaler.get_scale() < self.min_loss_scale:
                raise Diverged(
                    f"step {trainer.global_step}: the float16 loss scale fell to {scaler.get_scale():.1e}, every step"
                    " overflows; lower --model.lr or use --trainer.precision bf16-mixed or 32"
                )
        elif total.device.type == "cpu":
            if not torch.isfinite(total):  # NaN or Inf anywhere makes the total so
                raise Diverged(_diverged(trainer.global_step))
        else:
            # On a GPU, reading the verdict back every step would stall the queue: the first bad step is kept on
            # the device and read at each logged step and at the epoch's end, before any checkpoint is written
            # (Lightning runs the checkpoint callbacks last). Weights that turned NaN meanwhile are never saved.
            step = torch.tensor(float(trainer.global_step), device=total.device)
            bad = torch.where(torch.isfinite(total), torch.inf, step)
            self._first_bad = bad if getattr(self, "_first_bad", None) is None else self._first_bad.minimum(bad)
            if trainer.global_step % trainer.log_every_n_steps == 0:
                self._check(trainer)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._check(trainer)

    def _check(self, trainer) -> None:
        first_bad = getattr(self, "_first_bad", None)
        if first_bad is not None and torch.isfinite(first_bad):
            raise Diverged(_diverged(int(first_bad)))


def _diverged(step: int) -> str:
    return (
        f"step {step}: the loss or its gradients are NaN/Inf, stopped before they reached the weights;"
        " lower --model.lr or set --trainer.gradient_clip_val"
    )
