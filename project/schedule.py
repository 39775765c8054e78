"""The learning-rate schedule: linear warmup, then cosine decay, stepped once per optimizer step."""

from torch.optim import Optimizer
from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, LRScheduler, SequentialLR


def warmup_cosine(
    optimizer: Optimizer, total_steps: int, warmup_steps: int, min_lr: float, start_factor: float = 0.01
) -> LRScheduler:
    # At least one warmup step: LinearLR with total_iters=0 would divide by zero.
    warmup_steps = max(1, min(warmup_steps, total_steps - 1))
    warmup = LinearLR(optimizer, start_factor=start_factor, end_factor=1.0, total_iters=warmup_steps)
    # After the last step the LR sits exactly at min_lr (T_max counts the cosine steps only).
    cosine = CosineAnnealingLR(optimizer, T_max=max(1, total_steps - warmup_steps), eta_min=min_lr)
    return SequentialLR(optimizer, [warmup, cosine], milestones=[warmup_steps])
