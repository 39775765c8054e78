"""What a run's folder is called, and the names that may not lead out of it.

`runs/<name>/version_N`: unless `--trainer.logger.init_args.name` is given (on the command line or in a config),
the name says what the run trained: the dataset (`digits`, or your data file's stem), then the network's class when
it is not the default one: `digits`, `three`, `digits-mlp`, `three-mlp`. Own data or another network never lands
in `runs/digits/` unless asked, and `--ckpt_path last|best` with the same options finds its runs again. A config
that changes the recipe names its runs itself (configs/experiments/mlp.yaml, configs/debug/overfit.yaml); one that
only moves it to other hardware (configs/gpu.yaml) keeps them with the others.
"""

from pathlib import Path, PurePath

from project.core.errors import UsageError

# Logger settings that name one folder inside the runs root (or the run): never a path that leads elsewhere.
COMPONENTS = ("name", "version", "sub_dir")
# File names inside the run folder; a checkpoint's may hold a sub-folder ("{epoch}/best"), never "..".
FILENAMES = ("checkpoint.filename", "last_checkpoint.filename", "prediction_writer.filename", "summary.filename")


def run_name(config, default_network: str) -> str:
    """The folder name for a run of `config` whose logger was not given a name; `default_network`: the network's
    class path when no other is chosen, left out of the name."""
    data = config.data
    path = data.init_args.get("path") if data.get("init_args") is not None else None
    parts = [Path(path).stem if path else _short(data.class_path).removesuffix("datamodule")]
    network = config.model.get("network")
    class_path = network.get("class_path") if hasattr(network, "get") else None
    if class_path and class_path != default_network:
        parts.append(_short(class_path))
    return "-".join(part for part in parts if part)


def check_names(config) -> None:
    """Refuse a logger name, version or file name that would write outside its folder, in one line."""
    logger = config.trainer.logger
    init_args = logger.get("init_args") if hasattr(logger, "get") else None  # one logger given by class path
    for key in COMPONENTS if init_args is not None else ():
        value = init_args.get(key)
        if value is not None and not (isinstance(value, int) or is_component(str(value))):
            raise UsageError(
                f"--trainer.logger.init_args.{key} {value!r}: must be one folder name (no '/', not '..' or empty)"
            )
    for key in FILENAMES:
        value = config.get(key)
        if value is not None and (PurePath(value).is_absolute() or ".." in PurePath(value).parts):
            raise UsageError(f"--{key} {value!r}: must be a file name inside the run folder")


def is_component(name: str) -> bool:
    """One folder name: what `runs/<name>` holds and nothing else."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0")


def _short(class_path: str) -> str:
    return class_path.rpartition(".")[2].lower()
