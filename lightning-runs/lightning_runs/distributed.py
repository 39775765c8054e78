"""What every rank does together: gathering rows of unequal count, and knowing rank zero before the Trainer."""

import os

import torch
from lightning.pytorch.utilities import rank_zero_only


def gather_rows(trainer, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every rank's `rows` (R_r, ...) as one (W, R_max, ...) tensor, zero-padded, and each rank's count (W,).

    all_gather needs equal shapes, so each rank pads to the longest; the counts say which rows are real.
    Collective: every rank must call it.
    """
    if trainer.world_size == 1:
        return rows[None], torch.tensor([len(rows)])
    counts = trainer.strategy.all_gather(torch.tensor(len(rows), device=rows.device))  # (W,)
    padded = torch.cat([rows, rows.new_zeros(int(counts.max()) - len(rows), *rows.shape[1:])])
    return trainer.strategy.all_gather(padded), counts.cpu()  # (W, R_max, ...)


def launched_as_rank_zero() -> bool:
    """Whether this process will be global rank zero, before the Trainer exists to say so.

    `rank_zero_only.rank` comes from the launcher's variables (torchrun's RANK, SLURM_PROCID, LOCAL_RANK of
    Lightning's own children); Lightning's multi-node launch starts every node's first process with only NODE_RANK.
    """
    return rank_zero_only.rank == 0 and os.environ.get("NODE_RANK", "0") == "0"
