"""Sharded checkpoints: a folder per checkpoint (`last.ckpt/`), one shard file per process, that is whole or absent.

Written as Lightning's ModelParallelStrategy writes them (`save_distributed_checkpoint=True`): the weights and
optimizer states by torch.distributed.checkpoint (`.metadata`, `__<rank>_0.distcp`, each fsynced), everything else
in `meta.pt`. Here into a hidden sibling first (`.last.ckpt.partial/`), swapped in by rank zero after every rank has
written its shard: a kill at any moment leaves the previous checkpoint whole, and nothing reads a hidden folder.
Read back in one process (test, predict, export, the checks before a command) as one plain checkpoint, the form a
full single-file checkpoint has.
"""

import contextlib
import ctypes
import errno
import io
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import torch

from lightning_runs.atomic import write_atomically
from lightning_runs.folders.layout import METADATA, SHARDS_METADATA, is_checkpoint, is_sharded

__all__ = ["METADATA", "SHARDS_METADATA", "consolidated", "is_checkpoint", "is_sharded", "one_file", "save_sharded"]
_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def partial_folder(path: Path) -> Path:
    return path.with_name(f".{path.name}.partial")


def save_sharded(strategy, checkpoint: dict, path: Path) -> None:
    """Every rank writes its shard of `checkpoint` into a hidden sibling of `path`; rank zero then swaps it in.
    Called on every rank (a collective), as Lightning calls a strategy's save_checkpoint."""
    from torch.distributed.checkpoint import save

    path = Path(strategy.broadcast(str(path)))  # every rank writes into rank zero's folder
    partial = partial_folder(path)
    if strategy.global_rank == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        for left in path.parent.glob(".*.partial"):  # what a killed save left: its shards, or what it replaced
            _remove(left)
        partial.mkdir()
    strategy.barrier()
    state_dict = checkpoint.pop("state_dict")
    _rank_zeros(state_dict)
    shards = {"state_dict": state_dict}
    shards |= {f"optimizer_{i}": state for i, state in enumerate(checkpoint.pop("optimizer_states", []))}
    save(shards, checkpoint_id=partial)  # fsyncs each shard; rank zero writes `.metadata` once all are written
    try:
        if strategy.global_rank == 0:
            buffer = io.BytesIO()
            torch.save(checkpoint, buffer)
            write_atomically(partial / METADATA, buffer.getvalue())
            swap_in(partial, path)
    finally:  # even where rank zero failed (a full disk): the others then end with it, not after the barrier's timeout
        strategy.barrier()  # no rank goes on (to read it, or to save again) before it is in place


def _rank_zeros(state_dict: dict) -> None:
    """Rank zero's value of each tensor that is not sharded (a buffer: BatchNorm's running statistics), as a
    single-file checkpoint holds it. torch.distributed.checkpoint writes one rank's copy of such a tensor, not always
    rank zero's, and each rank's follows its own data between two training steps (sharding.py)."""
    from torch.distributed.tensor import DTensor

    if not torch.distributed.is_initialized():
        return
    for tensor in state_dict.values():
        if isinstance(tensor, torch.Tensor) and not isinstance(tensor, DTensor):
            torch.distributed.broadcast(tensor, src=0)


def swap_in(partial: Path, path: Path) -> None:
    """`partial` renamed to `path`, atomically where it replaces one (Linux's renameat2 RENAME_EXCHANGE swaps two
    folders, or a file and a folder, in one step); what it replaced is removed only after the swap."""
    if not path.exists() and not path.is_symlink():
        os.rename(partial, path)
    elif _exchange(partial, path):
        _remove(partial)  # now the replaced checkpoint
    else:  # no renameat2 (not Linux, or a filesystem without it): a moment without `path`, the old one kept aside
        aside = path.with_name(f".{path.name}.replaced")
        _remove(aside)
        os.rename(path, aside)
        os.rename(partial, path)
        _remove(aside)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)  # make the renames themselves durable
    finally:
        os.close(folder)


def _exchange(a: Path, b: Path) -> bool:
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def consolidated(path: Path) -> dict:
    """The sharded checkpoint at `path` as one plain checkpoint (weights_only), read in this process alone: full
    tensors under `state_dict`, `optimizer_states` keyed by parameter index, as a single-file checkpoint's are.
    Through a temporary file (torch's public dcp_to_torch_save), memory-mapped: the full state is paged in as it is
    used, not held twice."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    with tempfile.TemporaryDirectory() as scratch:
        full = Path(scratch) / "consolidated.pt"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "torch.distributed is disabled ...": one process, as asked
            dcp_to_torch_save(path, full)
        shards = torch.load(full, map_location="cpu", weights_only=True, mmap=True)  # mapped: outlives the file
    checkpoint = torch.load(Path(path) / METADATA, map_location="cpu", weights_only=True)
    optimizers = sorted((int(key.split("_", 1)[1]), key) for key in shards if key.startswith("optimizer_"))
    checkpoint["state_dict"] = shards["state_dict"]
    checkpoint["optimizer_states"] = [_by_index(shards[key]) for _, key in optimizers]
    return checkpoint


def one_file(path: Path) -> contextlib.AbstractContextManager:
    """`path`, or for a sharded checkpoint its consolidated form as one file in memory: for what reads a file itself
    (`load_from_checkpoint`)."""
    if not is_sharded(path):
        return contextlib.nullcontext(path)
    buffer = io.BytesIO()
    torch.save(consolidated(path), buffer)
    buffer.seek(0)
    return contextlib.closing(buffer)


def _by_index(state: dict) -> dict:
    """An optimizer state keyed by parameter name (torch.distributed.checkpoint's) keyed by index instead, in the
    order of its groups, as `Optimizer.state_dict()` keys it. (A single-file FSDP checkpoint numbers them in the
    model's parameter order instead; torch and optimizer_states.py pair either with the parameters by position.)"""
    groups = state.get("param_groups", [])
    index = {name: i for i, name in enumerate(name for group in groups for name in group.get("params", []))}
    groups = [{**group, "params": [index[name] for name in group.get("params", [])]} for group in groups]
    return {
        "state": {index.get(name, name): value for name, value in state.get("state", {}).items()},
        "param_groups": groups,
    }
