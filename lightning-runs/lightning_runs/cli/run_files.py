"""The files a run writes in its folder, runs/<name>/version_N, as a command's options name them: each part's
`filename` (a ModelCheckpoint's `<dirpath or checkpoints>/<filename>.ckpt`, and `last.ckpt` beside it with
`save_last`), the config LightningCLI saves, and the logger's own files. Options that make two of them one path, one a
folder of another, or lead one out of the run's folder, are refused in one line as the command is parsed, before the
folder exists: a summary named `checkpoints/last.ckpt` wrote its JSON over the last checkpoint, and `last` and `best`
given one name kept one file for both."""

import itertools
import re
from fnmatch import fnmatchcase
from pathlib import Path

from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger, WandbLogger

from lightning_runs.cli.parts import PARTS
from lightning_runs.cli.placement import imported, relative
from lightning_runs.configs import option
from lightning_runs.errors import UsageError
from lightning_runs.run_folders import CHECKPOINTS, run_dir

# Each logger's files in the run folder (a glob where the name varies); the library's loggers subclass these, and the
# MLflow and W&B ones keep their service's run id in their `ID_FILE` there too.
LOGGED = {TensorBoardLogger: ("hparams.yaml", "events.out.tfevents.*"), CSVLogger: ("hparams.yaml", "metrics.csv")}
LOGGED[WandbLogger] = ("wandb",)  # W&B's own folder of the run


def run_files(config, config_filename: str, run: Path) -> dict[str, Path]:
    """What names each file (an option, or the logger) -> its path, a glob where Lightning fills in a `{metric}`."""
    logger = imported(config.trainer.logger.class_path)
    folder = run / (config.trainer.logger.init_args.get("sub_dir") or "")  # the logger's log_dir: all but checkpoints
    logged = [name for base, names in LOGGED.items() if issubclass(logger, base) for name in names]
    files = {f"the logger's {name}": folder / name for name in [*logged, getattr(logger, "ID_FILE", None)] if name}
    saved = Path(config_filename)  # and config.<subcommand>[-N].yaml, of each later command in the run
    files |= {f"the saved {name}": folder / name for name in (saved, f"{saved.stem}.*{saved.suffix}")}
    parts = [(f"--{option(cls.__name__)}", config.get(option(cls.__name__))) for cls in PARTS]
    for key, part in parts + [(f"--trainer.callbacks[{i}]", c) for i, c in enumerate(config.trainer.callbacks or [])]:
        cls, args = imported(part.get("class_path")) if part else None, (part or {}).get("init_args") or {}
        if isinstance(cls, type) and issubclass(cls, ModelCheckpoint):  # its own names: Lightning's, or the class's
            where = Path(args.dirpath) if args.get("dirpath") else run / CHECKPOINTS
            name = re.sub(r"\{[^}]*\}", "*", args.get("filename") or "{epoch}-{step}")
            names = {f"{key}.filename {args.get('filename')}": name}
            names |= {f"{key}.save_last": cls.CHECKPOINT_NAME_LAST} if args.get("save_last") else {}
            files |= {what: where / f"{name}{cls.FILE_EXTENSION}" for what, name in names.items()}
        elif args.get("filename"):  # none or empty: the part says what it takes
            files[f"{key}.filename {args.filename}"] = folder / args.filename
    return files


def check_run_files(config, config_filename: str) -> None:
    """`config`: a command's parsed config, its run named (placement.name_run)."""
    args = config.trainer.logger.init_args
    run = run_dir(args.save_dir, args.name, "version_N" if args.version is None else args.version).resolve()
    files = {}
    for what, path in run_files(config, config_filename, run).items():
        if run not in path.resolve().parents:
            raise UsageError(f"{what}: {relative(path.resolve())} lies outside the run's folder; name a file in it")
        files[what] = str(path.resolve().relative_to(run))
    for (a, one), (b, other) in itertools.combinations(files.items(), 2):
        for folder, file in ((one, other), (other, one)):
            if any(fnmatchcase(str(parent), folder) for parent in Path(file).parents):
                raise UsageError(f"{a} and {b}: {folder} would be a file and a folder ({file}); give each its own name")
        if one == other or fnmatchcase(one, other) or fnmatchcase(other, one):
            raise UsageError(f"{a} and {b}: both are {one} in the run's folder; give each its own name")
