"""Checkpoints written whole or not at all, read back as plain data or refused in one line naming the file.

`AtomicCheckpointIO` (or `BackgroundCheckpointIO`, the same in a background thread) as a Trainer plugin:
`Trainer(plugins=[BackgroundCheckpointIO()])`. Every checkpoint Lightning reads or writes goes through it: the one
place a checkpoint's path is known when its reading fails.
"""

import functools
import io
from pathlib import Path
from stat import S_ISREG
from typing import Any

import torch
from lightning.pytorch.plugins.io import AsyncCheckpointIO, TorchCheckpointIO

from lightning_runs.atomic import write_atomically
from lightning_runs.checkpoints.sharded import consolidated, is_sharded
from lightning_runs.errors import Diverged, UsageError, first_line


def read_checkpoint(path: str | Path) -> dict:
    """A checkpoint file, or a sharded fit's folder consolidated, as plain data (weights_only, memory-mapped: a large
    file is paged in as it is used); UsageError naming it where it is no readable Lightning checkpoint."""
    path = Path(path)
    if is_sharded(path):
        return consolidated(path)
    stat = path.stat()
    if not S_ISREG(stat.st_mode):  # a FIFO would block the read for good
        what = "a folder that is not a whole sharded checkpoint" if path.is_dir() else "not a regular file"
        raise UsageError(f"{path}: {what}; give a checkpoint file")
    return dict(_read(path, (stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)))


# The file last read, by identity (a rewritten file is another): a command's checks, its parse and the Trainer's restore
# read it once. The Trainer's read lets go of it (forget_read), so a fit holds no replaced last.ckpt on the disk.
@functools.lru_cache(maxsize=1)
def _read(path: Path, identity: tuple) -> dict:
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise  # the entry point names the path and the fix (errors.py)
    except Exception as error:  # empty, truncated, not a torch file, or objects that are not plain data
        raise UsageError(f"{path}: not a readable checkpoint ({first_line(error)})") from None
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("state_dict"), dict):
        raise UsageError(f"{path}: not a Lightning checkpoint (no state_dict)")
    for key in ("hyper_parameters", "datamodule_hyper_parameters"):  # what LightningCLI and ours read as mappings
        if not isinstance(checkpoint.get(key, {}), dict):
            raise UsageError(f"{path}: its {key} are a {type(checkpoint[key]).__name__}, not a mapping of arguments")
    return checkpoint


forget_read = _read.cache_clear


class AtomicCheckpointIO(TorchCheckpointIO):
    """Writes each checkpoint beside its target, fsynced, renamed into place: a kill at any moment leaves the old file
    or the new one, whole. Refuses to write non-finite weights (Diverged): a diverged run never replaces a good file.

    Lightning's default writes a temp file in $TMPDIR and moves it: across filesystems that is a copy, and a kill
    mid-copy leaves a truncated checkpoint with the previous one gone. Serialized in memory first: torch.save into a
    file reports a full disk as "unexpected pos", a plain write as ENOSPC.
    """

    def __init__(self, check_finite: bool = True) -> None:
        super().__init__()
        self.check_finite = check_finite

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options: Any = None) -> None:
        if self.check_finite:
            refuse_non_finite(checkpoint.get("state_dict", {}), path)
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        write_atomically(Path(path), buffer.getvalue())

    def load_checkpoint(self, path, map_location: Any = None, weights_only: bool | None = None) -> dict[str, Any]:
        try:
            return read_checkpoint(path)
        finally:
            forget_read()


class BackgroundCheckpointIO(AsyncCheckpointIO):
    """AtomicCheckpointIO in a background thread: training goes on while a checkpoint is written and fsynced.
    Lightning's AsyncCheckpointIO copies the tensors first, writes one at a time, and teardown waits for the last.
    Non-finite weights are refused before the copy, so the error reaches the run at once."""

    def __init__(self) -> None:
        super().__init__(AtomicCheckpointIO(check_finite=False))

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options: Any = None) -> None:
        refuse_non_finite(checkpoint.get("state_dict", {}), path)
        super().save_checkpoint(checkpoint, path, storage_options)


def refuse_non_finite(state_dict: dict[str, torch.Tensor], path) -> None:
    floating = {name: t for name, t in state_dict.items() if isinstance(t, torch.Tensor) and t.is_floating_point()}
    if not floating:
        return
    # One verdict per tensor, stacked where the weights are and read back once: one device sync per save.
    verdicts = [t.isfinite().all() for t in floating.values()]
    finite = torch.stack([v.to(verdicts[0].device) for v in verdicts]).tolist()
    if not all(finite):
        bad = [name for name, ok in zip(floating, finite, strict=True) if not ok]
        raise Diverged(f"refusing to write {path}: non-finite values in {', '.join(bad[:3])}")
