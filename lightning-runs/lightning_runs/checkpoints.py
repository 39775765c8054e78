"""Checkpoints that survive kills and resume exactly: atomic writes, RNG state, and loading that trusts nothing."""

import functools
import io
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.plugins.io import AsyncCheckpointIO, TorchCheckpointIO

from lightning_runs.atomic import write_atomically
from lightning_runs.checkpoint_types import wrong_type
from lightning_runs.class_paths import imported_class, names_class, plain_parameters
from lightning_runs.errors import Diverged, Failed, UsageError
from lightning_runs.private import CLASS_PATH_KEY, INSTANTIATOR_KEY, save_now, saved_class_path, steps_between_saves

# The only instantiator Lightning should ever call when it rebuilds a model from a checkpoint's hparams.
LIGHTNING_INSTANTIATOR = "lightning.pytorch.cli.instantiate_module"
CLASS_KEYS = ("class_path", CLASS_PATH_KEY)
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


class AtomicCheckpointIO(TorchCheckpointIO):
    """Writes each checkpoint next to its target, flushes and fsyncs it, then renames it into place.

    Lightning's default writes a temp file in $TMPDIR and moves it: on another filesystem that is a copy, and a
    kill mid-copy leaves a truncated checkpoint with the previous one already gone. Here a kill at any moment
    leaves the old or the new file, whole. On Linux the temp file has no name until it is complete
    (O_TMPFILE), so a killed writer leaves nothing behind either.

    Serialized in memory first, as Lightning's own writer does: torch.save into a file reports a full disk as
    "unexpected pos 336256 vs 336148", where a plain write of the bytes says ENOSPC.
    """

    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any = None) -> None:
        path = Path(path)
        _refuse_non_finite(checkpoint.get("state_dict", {}), path)
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        try:
            write_atomically(path, buffer.getvalue())
        except Failed as error:
            raise Failed(f"{error}; free some space, then resume with --ckpt_path last") from None


class BackgroundCheckpointIO(AsyncCheckpointIO):
    """AtomicCheckpointIO in a background thread: training goes on while a checkpoint is written and fsynced
    (about 20 ms each here, two an epoch: a fifth of an epoch of the default recipe on two CPU cores).

    Lightning's AsyncCheckpointIO copies the tensors first, so the file holds the state of the moment it was
    asked for; writes run one at a time, in order, and teardown waits for the last. Non-finite weights are
    refused here, before the copy, so the error reaches the run at once rather than at the next save.
    """

    def __init__(self) -> None:
        super().__init__(AtomicCheckpointIO())

    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any = None) -> None:
        _refuse_non_finite(checkpoint.get("state_dict", {}), Path(path))
        super().save_checkpoint(checkpoint, path, storage_options)


class RunCheckpoint(ModelCheckpoint):
    """ModelCheckpoint that recognises its own folder however the path is spelled.

    Lightning restores the saved state (best score, best path) only if the saved `dirpath` equals the current one as
    a string: a run saved under an absolute save_dir, or resumed from another working directory, lost it, and its
    next epoch replaced best.ckpt whatever it scored. Paths are compared resolved, and the saved ones are
    rewritten in the current spelling (an old spelling of the same file would otherwise be deleted as a stale one).
    """

    PATHS = ("best_model_path", "kth_best_model_path", "last_model_path")

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved, current = state_dict.get("dirpath"), self.dirpath
        if saved and current and saved != current and Path(saved).resolve() == Path(current).resolve():

            def respell(path: str) -> str:
                inside = path and Path(path).resolve().parent == Path(current).resolve()
                return str(Path(current) / Path(path).name) if inside else path

            state_dict = {**state_dict, "dirpath": current, **{k: respell(state_dict.get(k, "")) for k in self.PATHS}}
            state_dict["best_k_models"] = {respell(p): v for p, v in state_dict.get("best_k_models", {}).items()}
        super().load_state_dict(state_dict)

    # A step checkpoint of an epoch's last training batch would be taken before that epoch's validation, and a run
    # resumed from it went on without that validation: no best.ckpt for the epoch, early stopping without its metric
    # (kill -9 loops ended with more steps than an uninterrupted run, other weights). It is taken at the epoch's end,
    # after validation, where the epoch's own checkpoints are; a checkpoint of any other batch resumes exactly.
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if batch_idx + 1 < trainer.num_training_batches:
            super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        super().on_train_epoch_end(trainer, pl_module)  # Lightning's epoch-interval save, if it has one
        # Saved on a step interval, Lightning's own trigger never fires at an epoch's end: saved here instead. A fit
        # ending at this epoch (early stopping, a signal) leaves `last` at its end, whatever the interval.
        if steps_between_saves(self) or (self.monitor is None and trainer.should_stop):
            save_now(self, trainer)


class BestCheckpoint(RunCheckpoint):
    """ModelCheckpoint where a score equal to the kept one replaces it: ties go to the later epoch.

    With a small validation split many epochs reach the same top score. Lightning keeps the first of them, still
    trained at a high learning rate (epochs 11-17 of 30 across 5 seeds); the later one has seen the schedule out.
    """

    def check_monitor_top_k(self, trainer, current: torch.Tensor | None = None) -> bool:
        if current is not None and self.save_top_k == 1 and self.best_k_models:
            tie = bool(current == self.best_k_models[self.kth_best_model_path])
            if trainer.strategy.reduce_boolean_decision(tie):
                return True
        return super().check_monitor_top_k(trainer, current)


def _refuse_non_finite(state_dict: dict[str, torch.Tensor], path: Path) -> None:
    bad = [name for name, t in state_dict.items() if t.is_floating_point() and not torch.isfinite(t).all()]
    if bad:
        raise Diverged(f"refusing to write {path}: non-finite values in {', '.join(bad[:3])}")


class RandomState(Callback):
    """Saves and restores the torch, CUDA, NumPy and Python RNG states, so a resumed run draws the same dropout
    masks as an uninterrupted one (Lightning's checkpoints do not carry them).

    All ranks were seeded alike and draw alike, so rank zero's state (the one that gets written) is every rank's.
    Stored as tensors and lists only: loadable with `torch.load(weights_only=True)`.
    """

    def state_dict(self) -> dict[str, Any]:
        kind, keys, position, has_gauss, cached = np.random.get_state()
        version, python_state, gauss_next = random.getstate()
        return {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "numpy": [kind, keys.tolist(), position, has_gauss, cached],
            "python": [version, list(python_state), gauss_next],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        torch.set_rng_state(state["torch"])
        if state["cuda"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])
        kind, keys, position, has_gauss, cached = state["numpy"]
        np.random.set_state((kind, np.array(keys, dtype=np.uint32), position, has_gauss, cached))
        version, python_state, gauss_next = state["python"]
        random.setstate((version, tuple(python_state), gauss_next))


def load_plain(path: Path) -> dict:
    """`torch.load` as plain data (weights_only, memory-mapped), once per file version: a command reads the checkpoint
    it is given up to three times before the Trainer does (its data class, its safety check, whether its weights fit
    the model), and a large file is then read once. Raises what torch.load raises."""
    stat = Path(path).stat()
    return _load_plain(str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)  # keyed by the file's version: a checkpoint rewritten since is read again
def _load_plain(path: str, mtime_ns: int, size: int):
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True)


def read_checkpoint(path: Path, model_class: type | None = None) -> dict:
    """Load a checkpoint as plain data, or raise UsageError saying what is wrong with it, in one line.

    `model_class`: the LightningModule its `hyper_parameters` are for (its typed parameters tell data from class
    paths); the DataModule's is named in its `datamodule_hyper_parameters`.
    """
    if not path.is_file():
        raise UsageError(f"--ckpt_path {path}: no such file")
    try:
        checkpoint = load_plain(path)
    except Exception as error:  # empty, truncated, not a torch file, or holding objects that are not plain data
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UsageError(f"--ckpt_path {path}: not a readable checkpoint ({reason})") from None
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        raise UsageError(f"--ckpt_path {path}: not a Lightning checkpoint (no state_dict)")
    if problem := wrong_type(checkpoint):  # edited by hand: refused here, not inside Lightning's restore
        raise UsageError(f"--ckpt_path {path}: {problem}, so it cannot be restored")
    data = checkpoint.get("datamodule_hyper_parameters", {})
    data_class = imported_class(saved_class_path(data))
    for key, owner in (("hyper_parameters", model_class), ("datamodule_hyper_parameters", data_class)):
        problem = _unsafe_reference(checkpoint.get(key, {}), plain_parameters(owner))
        if problem:
            raise UsageError(f"--ckpt_path {path}: refusing to load, its {key} {problem}")
    return checkpoint


def _unsafe_reference(hparams: Any, plain: frozenset[str] = frozenset()) -> str | None:
    """Why these hyperparameters could make loading run code they name, or None. `plain`: keys typed as plain data.

    Lightning rebuilds the model by calling the `_instantiator` they name, and jsonargparse imports every class
    path in them, and any dotted string given to a parameter that takes a class or a callable; a checkpoint from
    elsewhere could name `os.system`, or a module whose import does harm. Only Lightning's instantiator and classes
    (never functions) are accepted, decided without importing anything (class_paths.py).
    """
    if not isinstance(hparams, dict):
        return None
    instantiator = hparams.get(INSTANTIATOR_KEY)
    if instantiator is not None and instantiator != LIGHTNING_INSTANTIATOR:
        return f"name {instantiator!r} as instantiator"
    for key, value in hparams.items():
        if key == INSTANTIATOR_KEY:
            continue
        if isinstance(value, dict):
            if "class_path" in value:  # {class_path, init_args}: the arguments are that class's
                owner = plain_parameters(imported_class(value["class_path"]))
            else:  # the arguments of the class above, or a mapping given as a value: nothing known about it
                owner = plain if key in ("init_args", "dict_kwargs") else frozenset()
            problem = _unsafe_reference(value, owner)
        elif isinstance(value, str) and (key in CLASS_KEYS or (key not in plain and _DOTTED.fullmatch(value))):
            problem = None if names_class(value) is not False else f"name {value!r}, which is not a class"
        else:
            problem = None
        if problem:
            return problem
    return None
