"""Sharded checkpoints: a folder per checkpoint (`last.ckpt/`), one shard file per process, whole or refused.

Written as Lightning's ModelParallelStrategy writes them (`save_distributed_checkpoint=True`): weights and optimizer
states by torch.distributed.checkpoint (`.metadata`, `__<rank>_0.distcp`), everything else in `meta.pt`. Here into a
hidden sibling first (`.last.ckpt.partial/`), swapped in by rank zero once every rank has written: a kill leaves the
previous checkpoint whole. Each rank's shard carries the save's identity (a random token and the step), which
`meta.pt` holds too: a shard copied from another save, or a missing one, is refused before anything reads weights.
"""

import ctypes
import errno
import io
import os
import shutil
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch

from lightning_runs.atomic import write_atomically
from lightning_runs.errors import UsageError, first_line

# Lightning's name for the part that is not sharded (lightning.fabric.utilities.load._METADATA_FILENAME, private.py)
# and torch.distributed.checkpoint's index of the shards.
METADATA, SHARDS_METADATA = "meta.pt", ".metadata"
IDENTITY = "sharded_identity"  # meta.pt's key, and each rank's `sharded_identity_<rank>` in the shards
_RENAME_EXCHANGE, _AT_FDCWD = 2, -100  # linux/fs.h, fcntl.h


def is_sharded(path: Path) -> bool:
    path = Path(path)
    return path.is_dir() and (path / SHARDS_METADATA).is_file() and (path / METADATA).is_file()


def is_checkpoint(path: Path) -> bool:
    return Path(path).is_file() or is_sharded(path)


def save_sharded(strategy, checkpoint: dict, path: Path) -> None:
    """Every rank writes its shard into a hidden sibling of `path`; rank zero swaps it in. A collective."""
    from torch.distributed.checkpoint import save

    path = Path(strategy.broadcast(str(path)))  # every rank writes into rank zero's folder
    partial = path.with_name(f".{path.name}.partial")
    token = strategy.broadcast(int.from_bytes(os.urandom(7), "little"))
    identity = torch.tensor([token, checkpoint.get("global_step", 0), strategy.world_size])
    if strategy.global_rank == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        for left in path.parent.glob(".*.partial"):  # what a killed save left
            _remove(left)
        partial.mkdir()
    strategy.barrier()
    state_dict = checkpoint.pop("state_dict")
    _rank_zeros(state_dict)
    shards = {"state_dict": state_dict, f"{IDENTITY}_{strategy.global_rank}": identity}
    shards |= {f"optimizer_{i}": state for i, state in enumerate(checkpoint.pop("optimizer_states", []))}
    save(shards, checkpoint_id=partial)  # fsyncs each shard; rank zero writes `.metadata` once all are written
    try:
        if strategy.global_rank == 0:
            buffer = io.BytesIO()
            torch.save({**checkpoint, IDENTITY: identity}, buffer)
            write_atomically(partial / METADATA, buffer.getvalue())
            swap_in(partial, path)
    finally:  # even where rank zero failed: the others then end with it, not after the barrier's timeout
        strategy.barrier()


def _rank_zeros(state_dict: dict) -> None:
    """Rank zero's copy of each tensor that is not sharded (BatchNorm's running statistics): torch's distributed
    checkpoint writes one rank's copy, not always rank zero's, and each rank's follows its data (parallel/fsdp.py)."""
    from torch.distributed.tensor import DTensor

    if torch.distributed.is_initialized():
        for tensor in state_dict.values():
            if isinstance(tensor, torch.Tensor) and not isinstance(tensor, DTensor):
                torch.distributed.broadcast(tensor, src=0)


def swap_in(partial: Path, path: Path) -> None:
    """`partial` renamed to `path`, atomically where it replaces one (Linux's renameat2 RENAME_EXCHANGE swaps two
    folders in one step); the replaced one is removed only after the swap."""
    if not path.exists() and not path.is_symlink():
        os.rename(partial, path)
    elif _exchange(partial, path):
        _remove(partial)  # now the replaced checkpoint
    else:  # no renameat2: a moment without `path`, the old one kept aside
        aside = path.with_name(f".{path.name}.replaced")
        _remove(aside)
        os.rename(path, aside)
        os.rename(partial, path)
        _remove(aside)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
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


@contextmanager
def _readable(path: Path):
    """torch.distributed.checkpoint's CheckpointException (a BaseException: a truncated or corrupt shard) as one line
    naming the checkpoint."""
    from torch.distributed.checkpoint.api import CheckpointException

    try:
        yield
    except CheckpointException as error:
        raise UsageError(f"{path}: a shard could not be read ({first_line(error)}); give a whole checkpoint") from None


def check_whole(path: Path) -> dict:
    """`meta.pt` of the sharded checkpoint at `path`, once every shard file its index names is there and every rank's
    shard is of the same save; else UsageError naming what is missing or stray."""
    from torch.distributed.checkpoint import FileSystemReader, load

    path = Path(path)
    reading = path / METADATA
    try:  # meta.pt and torch's index of the shards, truncated or not torch's: what torch.load and pickle raise
        meta = torch.load(reading, map_location="cpu", weights_only=True)
        reading = path / SHARDS_METADATA
        files = {item.relative_path for item in FileSystemReader(path).read_metadata().storage_data.values()}
    except Exception as error:
        said = f"{reading}: not readable ({first_line(error)}); give the folder as its fit saved it"
        raise UsageError(said) from None
    identity = meta.get(IDENTITY) if isinstance(meta, dict) else None
    if not isinstance(identity, torch.Tensor):
        raise UsageError(f"{path}: a sharded checkpoint without the identity of its save; give one this library saved")
    missing = sorted(name for name in files if not (path / name).is_file())
    if missing:
        raise UsageError(f"{path}: its shard {missing[0]} is missing; give the folder as its fit saved it")
    shards = {f"{IDENTITY}_{rank}": torch.zeros_like(identity) for rank in range(int(identity[2]))}
    with warnings.catch_warnings(), _readable(path):
        warnings.simplefilter("ignore")  # "torch.distributed is disabled ...": one process, as meant
        load(shards, checkpoint_id=path, no_dist=True)
    stray = [key.rpartition("_")[2] for key, value in shards.items() if not torch.equal(value, identity)]
    if stray:
        raise UsageError(
            f"{path}: the shard of rank {stray[0]} comes from another save than its meta.pt; give the folder as its"
            " fit saved it, every shard from that save"
        )
    return meta


def consolidated(path: Path) -> dict:
    """The sharded checkpoint at `path` as one plain checkpoint, read in this process alone: full tensors under
    `state_dict`, `optimizer_states` keyed by parameter index, as a single-file checkpoint's are. Through torch's
    dcp_to_torch_save into a temporary file, memory-mapped."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    checkpoint = check_whole(path)
    with tempfile.TemporaryDirectory() as scratch:
        full = Path(scratch) / "consolidated.pt"
        with warnings.catch_warnings(), _readable(path):
            warnings.simplefilter("ignore")
            dcp_to_torch_save(path, full)
        shards = torch.load(full, map_location="cpu", weights_only=True, mmap=True)  # mapped: outlives the file
    optimizers = sorted((int(key.split("_", 1)[1]), key) for key in shards if key.startswith("optimizer_"))
    checkpoint["state_dict"] = shards["state_dict"]
    checkpoint["optimizer_states"] = [_by_index(shards[key]) for _, key in optimizers]
    return checkpoint


def _by_index(state: dict) -> dict:
    """An optimizer state keyed by parameter name (torch.distributed.checkpoint's) keyed by index, in the order of its
    groups, as `Optimizer.state_dict()` keys it."""
    groups = state.get("param_groups", [])
    index = {name: i for i, name in enumerate(name for group in groups for name in group.get("params", []))}
    groups = [{**group, "params": [index[name] for name in group.get("params", [])]} for group in groups]
    return {"state": {index.get(k, k): v for k, v in state.get("state", {}).items()}, "param_groups": groups}
