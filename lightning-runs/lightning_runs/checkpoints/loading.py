"""Loading a checkpoint that trusts nothing: plain data only, its types checked, no class path that runs code."""

import copy
import functools
import re
import warnings
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import LightningDataModule
from lightning.pytorch.utilities.migration import migrate_checkpoint
from packaging.version import InvalidVersion, Version

from lightning_runs.checkpoints.class_paths import import_named_class, imported_class, names_class, plain_parameters
from lightning_runs.checkpoints.field_types import wrong_type
from lightning_runs.checkpoints.sharded import METADATA, SHARDS_METADATA, consolidated, is_sharded
from lightning_runs.errors import UsageError, first_line
from lightning_runs.private import CLASS_PATH_KEY, INSTANTIATOR_KEY, saved_class_path

# The only instantiator Lightning should ever call when it rebuilds a model from a checkpoint's hparams.
LIGHTNING_INSTANTIATOR = "lightning.pytorch.cli.instantiate_module"
CLASS_KEYS = ("class_path", CLASS_PATH_KEY)
VERSION_KEY = "pytorch-lightning_version"  # the version that wrote it, which Lightning upgrades it from
TENSORS = ("state_dict", "optimizer_states")  # what Lightning's upgrades leave alone, and too large to copy
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


def load_plain(path: Path) -> dict:
    """`torch.load` as plain data (weights_only, memory-mapped), once per file version: a command reads the checkpoint
    it is given up to three times before the Trainer does (its data class, its safety check, whether its weights fit
    the model), and a large file is then read once. Raises what torch.load raises."""
    if is_sharded(path):  # a folder of shards: consolidated in this process (sharded.py), keyed by its indexes
        meta, shards, folder = (Path(path) / name for name in (METADATA, SHARDS_METADATA, ""))
        version = (folder.stat().st_ino, meta.stat().st_mtime_ns, shards.stat().st_mtime_ns)
        return _load_plain(str(Path(path).resolve()), *version)
    stat = Path(path).stat()
    return _load_plain(str(Path(path).resolve()), stat.st_ino, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)  # keyed by the file's version: a checkpoint rewritten since is read again
def _load_plain(path: str, *version: int):
    if Path(path).is_dir():
        return consolidated(Path(path))
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True)


def read_checkpoint(path: Path, model_class: type | None = None) -> dict:
    """Load a checkpoint as plain data, or raise UsageError saying what is wrong with it, in one line.

    `model_class`: the LightningModule its `hyper_parameters` are for (its typed parameters tell data from class
    paths); the DataModule's is named in its `datamodule_hyper_parameters`.
    """
    if path.is_dir() and not is_sharded(path):
        raise UsageError(
            f"--ckpt_path {path}: a folder that is not a sharded checkpoint (no {SHARDS_METADATA} and {METADATA}"
            " in it); give a checkpoint file or the folder a sharded fit saved"
        )
    if not path.is_file() and not path.is_dir():
        raise UsageError(f"--ckpt_path {path}: no such file")
    try:
        checkpoint = load_plain(path)
    except Exception as error:  # empty, truncated, not a torch file, or holding objects that are not plain data
        reason = first_line(error)
        raise UsageError(f"--ckpt_path {path}: not a readable checkpoint ({reason})") from None
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        raise UsageError(f"--ckpt_path {path}: not a Lightning checkpoint (no state_dict)")
    if problem := wrong_type(checkpoint):  # edited by hand: refused here, not inside Lightning's restore
        raise UsageError(f"--ckpt_path {path}: {problem}, so it cannot be restored")
    if problem := _version_problem(checkpoint):
        raise UsageError(f"--ckpt_path {path}: {problem}; give the file as the run that wrote it saved it")
    data_class = _data_class(saved_class_path(checkpoint.get("datamodule_hyper_parameters", {})))
    for key, owner in (("hyper_parameters", model_class), ("datamodule_hyper_parameters", data_class)):
        problem = _unsafe_reference(checkpoint.get(key, {}), plain_parameters(owner))
        if problem:
            raise UsageError(f"--ckpt_path {path}: refusing to load, its {key} {problem}")
    return checkpoint


def _data_class(dotted: str | None) -> type | None:
    """The DataModule class the checkpoint names, whose typed parameters tell a file name (`test.csv`) from a class
    path: imported where its module's source defines it, as the CLI and export import it to rebuild the data. Before,
    only a class already imported counted, and a run on a DataModule of the owner's other module had its `path:
    test.csv` refused by `test --ckpt_path <file>`, the command the fit prints."""
    try:
        return imported_class(dotted) or import_named_class(dotted, LightningDataModule)
    except Exception:  # its module fails to import: its parameters are judged as references, strictly
        return None


def _version_problem(checkpoint: dict) -> str | None:
    """Lightning upgrades a checkpoint from the version it names before reading it: without one that was a KeyError
    traceback, with one that is no version number an InvalidVersion, and one older than what the file holds (a hand
    edit) a KeyError from the upgrade. The upgrade is tried here on a copy of what it changes (not the tensors)."""
    version = checkpoint.get(VERSION_KEY)
    if version is None:
        return f"it holds no {VERSION_KEY}, which every checkpoint Lightning writes holds"
    try:
        Version(str(version))
    except InvalidVersion:
        return f"its {VERSION_KEY} {version!r} is not a version number"
    upgraded = copy.deepcopy({key: value for key, value in checkpoint.items() if key not in TENSORS})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "produced with a newer Lightning": said once, when Lightning loads it
            migrate_checkpoint(upgraded)
    except Exception as error:
        reason = f"{type(error).__name__} {first_line(error)}"
        return f"its {VERSION_KEY} {version} does not match what it holds (Lightning's upgrade from it: {reason})"
    return None


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
