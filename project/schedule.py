"""AdamW's parameter groups and the learning-rate schedule (linear warmup, then cosine, stepped per optimizer step).

Plain PyTorch: the LightningModule and benchmarks/plain_loop.py build their optimizer from the same two functions.
"""

from torch import nn
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


def decay_groups(network: nn.Module, weight_decay: float) -> list[dict]:
    """Matrices and conv kernels decayed; biases and normalization parameters (1-D) not. Named for the LR monitor."""
    decay, no_decay = [], []
    for param in network.parameters():
        if param.requires_grad:
            (decay if param.ndim >= 2 else no_decay).append(param)
    return [
        {"name": "decay", "params": decay, "weight_decay": weight_decay},
        {"name": "no_decay", "params": no_decay, "weight_decay": 0.0},
    ]
