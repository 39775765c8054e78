"""What every rank does together: gathering rows of unequal count, sharded tensors made whole, and knowing rank zero
before the Trainer."""

import os

import torch
from lightning.pytorch.utilities import rank_zero_only
from torchmetrics.utilities.distributed import gather_all_tensors


def gather_rows(rows: torch.Tensor) -> list[torch.Tensor]:
    """Every rank's `rows` (R_r, ...), in rank order, the counts allowed to differ. Collective: every rank calls it.

    torchmetrics' gather pads to the longest and trims again, as its metrics' own states are gathered.
    """
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return [rows]  # one process: nothing to gather
    return gather_all_tensors(rows)


def every_ranks(thing) -> list:
    """Every rank's `thing` (picklable: a loader's state), in rank order. Collective: every rank calls it."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return [thing]
    gathered = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(gathered, thing)
    return gathered


def whole(tensor: torch.Tensor) -> torch.Tensor:
    """A sharded tensor (a DTensor: FSDP's parameters and gradients, a norm of them) as one plain tensor. Collective
    where it is sharded: every rank calls it. Any other tensor as it is."""
    from torch.distributed.tensor import DTensor

    return tensor.full_tensor() if isinstance(tensor, DTensor) else tensor


def this_ranks_part(tensor: torch.Tensor) -> torch.Tensor:
    """A sharded tensor's part on this rank, as a plain tensor (no collective: rank zero alone may call it); any other
    tensor as it is."""
    from torch.distributed.tensor import DTensor

    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


def launched_as_rank_zero() -> bool:
    """Whether this process will be global rank zero, before the Trainer exists to say so.

    `rank_zero_only.rank` comes from the launcher's variables (torchrun's RANK, SLURM_PROCID, LOCAL_RANK of
    Lightning's own children); Lightning's multi-node launch starts every node's first process with only NODE_RANK.
    """
    return rank_zero_only.rank == 0 and os.environ.get("NODE_RANK", "0") == "0"  # ty: ignore[missing-attribute]  # Lightning sets it on the function at import
