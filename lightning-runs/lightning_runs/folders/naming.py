"""What a run's folder is called, and the names that may not lead out of it.

`runs/<name>/version_N`: unless `--trainer.logger.init_args.name` is given (on the command line or in a config),
the name says what the run trained: its data, then the network's class when it is not the default one. The data's
part is read from the DataModule's signature, whatever its fields: the stems of the files given to its required
arguments (those without a default), else its class's short name without a "DataModule" suffix. The example's
default data has no required argument and gives its class name; a `FileDataModule(path="three.npz")` gives
`three`, with another network `three-mlp`. Own data or another network never lands in the default data's folder
unless asked, and `--ckpt_path last|best` with the same options finds its runs again. A config that changes the
recipe names its runs itself (a config of another network, a debugging config); one that only moves it to other
hardware (a GPU config) keeps them with the others.

Two DataModules never share a folder: where `runs/<name>` holds runs of other data (another class, or other files
with the same stems, `bc.csv` and `bc.npz`), a run takes the next of its longer names (`bc-npz`, then `bc-<class>`,
then `bc-2`, ...) that is free or holds its own data; the first data to use a name keeps it.
"""

import importlib
import inspect
import itertools
import os
from pathlib import Path, PurePath

from lightning_runs.errors import UsageError
from lightning_runs.folders.files import FILE_OPTIONS
from lightning_runs.folders.layout import run_dir, saved_config
from lightning_runs.limits import MAX_NAME_BYTES

# Logger settings that name one folder inside the runs root (or the run): never a path that leads elsewhere.
COMPONENTS = ("name", "version", "sub_dir")
# Parameters a config gives by name (not *args or **kwargs).
NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def run_name(config, default_model: str, default_network: str | None, root: Path | None = None) -> str:
    """The folder name for a run of `config` whose logger was not given a name: its data, then the model's class
    where it is not `default_model`, then the network's where it is not `default_network` (the default model's).
    With the runs `root`: the first of the data's names (data_names) whose folder is free or holds runs of this
    same data, so that other data never shares a folder."""
    model_path = config.model.get("class_path") or default_model
    network = (config.model.get("init_args") or {}).get("network")
    class_path = network.get("class_path") if hasattr(network, "get") else None
    model = _short(model_path) if model_path != default_model else None
    own = _short(class_path) if class_path and class_path != default_network else None
    for label in data_names(config.data):
        name = "-".join(part for part in (label, model, own) if part)
        if root is None or _holds_only(root / name, config.data):
            return name
    raise AssertionError("data_names is endless")


def data_names(data):
    """The data's label (`bc`), then longer ones for when another DataModule has that folder: with its files'
    suffixes (`bc-npz`), with its class (`bc-tabledata`), then numbered (`bc-2`, ...)."""
    label, class_path = data_label(data), data.get("class_path") or ""
    yield label
    suffixes = [Path(os.fspath(v)).suffix.lstrip(".") for v in _file_values(class_path, data.get("init_args") or {})]
    short = _short(class_path).removesuffix("datamodule")
    longer = [f"{label}-{'-'.join(filter(None, suffixes))}", f"{label}-{short}" if label != short else label]
    yield from (name for name in dict.fromkeys(longer) if name not in (label, f"{label}-"))
    yield from (f"{label}-{n}" for n in itertools.count(2))


def _holds_only(folder: Path, data) -> bool:
    """Whether `folder` has no run yet, or its runs (their config.yaml) read the data `data` names: the same class,
    and the same paths given to its required arguments."""
    path = next(iter(sorted(folder.glob("*/config.yaml"))), None)
    if path is None:
        return True
    theirs = (saved_config(path) or {}).get("data")  # no config of this library's: a folder to leave alone
    return isinstance(theirs, dict) and _identity(theirs) == _identity(data)


def _identity(data) -> tuple:
    class_path, init_args = data.get("class_path") or "", data.get("init_args") or {}
    values = [
        os.path.abspath(os.fspath(v)) if isinstance(v, str | os.PathLike) else v
        for v in _required_values(class_path, init_args)
    ]
    return class_path, values


def _file_values(class_path: str, init_args) -> list:
    return [v for v in _required_values(class_path, init_args) if _names_a_file(v)]


def data_label(data) -> str:
    """What `data` (a `class_path` and its `init_args`, as a config or summary.json holds them) is called: the
    stems of the existing files given to its class's required arguments, else the class's short name."""
    class_path, init_args = data.get("class_path") or "", data.get("init_args") or {}
    stems = [Path(os.fspath(v)).stem for v in _file_values(class_path, init_args)]
    return "-".join(stems) or _short(class_path).removesuffix("datamodule")


def _required_values(class_path: str, init_args) -> list:
    """The values given to the class's parameters without a default, in their order (none if it won't import)."""
    module, _, name = class_path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        return []
    return [init_args.get(param) for param in _required(cls) if init_args.get(param) is not None]


def _required(cls) -> list[str]:
    """Required parameter names of `cls(...)`, those of its bases' __init__ too where it passes **kwargs on (as
    jsonargparse reads them)."""
    names = []
    for klass in inspect.getmro(cls):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue  # inherited: the next class in the MRO defines it
        try:
            parameters = list(inspect.signature(init).parameters.values())[1:]  # without self
        except (TypeError, ValueError):  # a C-level __init__ (object's): nothing more to read
            break
        names += [p.name for p in parameters if p.default is p.empty and p.kind in NAMED]
        if not any(p.kind == p.VAR_KEYWORD for p in parameters):
            break
    return list(dict.fromkeys(names))


def _names_a_file(value) -> bool:
    return isinstance(value, str | os.PathLike) and bool(os.fspath(value)) and Path(os.fspath(value)).exists()


def check_names(config) -> None:
    """Refuse a logger name, version or file name that would write outside its folder, in one line."""
    logger = config.trainer.logger
    init_args = logger.get("init_args") if hasattr(logger, "get") else None  # one logger given by class path
    for key in COMPONENTS if init_args is not None else ():
        value = init_args.get(key)
        if value is not None and not (isinstance(value, int) or is_component(str(value))):
            raise UsageError(
                f"--trainer.logger.init_args.{key} {value!r}: must be one folder name (no '/' or control character,"
                " not '..' or empty)"
            )
        if value is not None and len(str(value).encode()) > MAX_NAME_BYTES:
            raise UsageError(
                f"--trainer.logger.init_args.{key}: {len(str(value).encode())} bytes, more than the"
                f" {MAX_NAME_BYTES} a folder name may have (lightning_runs/limits.py)"
            )
    if init_args is not None and "save_dir" in init_args:
        check_runs_root(init_args.save_dir)
        _check_not_files(init_args)
    for key in FILE_OPTIONS:  # a checkpoint's may hold a sub-folder ("{epoch}/best"), never ".."
        value = config.get(key)
        if value is not None and (PurePath(value).is_absolute() or ".." in PurePath(value).parts):
            raise UsageError(f"--{key} {value!r}: must be a file name inside the run folder")


def check_runs_root(save_dir) -> None:
    """The runs root is a folder this user may write in (or will be created): an empty one would write into the
    working directory itself, a file or a read-only folder failed with a traceback once the run had started."""
    option = "--trainer.logger.init_args.save_dir"
    if save_dir is None or not str(save_dir).strip():
        raise UsageError(f"{option} {save_dir!r}: must name the runs root, a folder (runs by default)")
    root = Path(save_dir)
    if root.is_symlink() and not root.exists():
        raise UsageError(f"{option} {save_dir}: {root} is a link to {os.readlink(root)}, which does not exist")
    existing = next(p for p in (root, *root.absolute().parents) if p.exists())  # the root, or what it is made in
    if not existing.is_dir():
        raise UsageError(f"{option} {save_dir}: {existing} is a file, not a folder; give another runs root")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {save_dir}: {existing} is not writable by you; give another runs root")


def _check_not_files(init_args) -> None:
    """The run's folders under the runs root, `<name>` and a `version` given, are folders where they exist: a file or
    a link to nowhere there was a FileExistsError traceback as the run folder was made."""
    name, version = init_args.get("name"), init_args.get("version")
    folders = {} if name is None else {"name": Path(init_args.save_dir) / str(name)}
    if name is not None and version is not None:
        folders["version"] = run_dir(init_args.save_dir, str(name), version)
    for key, path in folders.items():
        if path.is_symlink() and not path.exists():  # a link to nowhere: mkdir there was a FileExistsError traceback
            raise UsageError(
                f"--trainer.logger.init_args.{key} {path.name}: {path} is a link to {os.readlink(path)}, which does"
                f" not exist; give another {key}, or remove the link"
            )
        if path.exists() and not path.is_dir():
            raise UsageError(
                f"--trainer.logger.init_args.{key} {path.name}: {path} is a file, not a run folder; give another"
                f" {key}, or move the file out of {path.parent}"
            )


def is_component(name: str) -> bool:
    """One folder name: what `runs/<name>` holds and nothing else, printable in a terminal line (a newline in a name
    split every message and table that names the run)."""
    printable = not any(ord(c) < 32 or ord(c) == 127 for c in name)
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0") and printable


def _short(class_path: str) -> str:
    return class_path.rpartition(".")[2].lower()
