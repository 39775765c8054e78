"""Which run a command is: its name, its `version_N`, the checkpoint `--ckpt_path` means, read from the parsed config.

- The name is `--name`, else the logger's `name`, else the first `--config` file's stem, else the project's default:
  `runs/<name>/version_N`.
- `--ckpt_path last|best` is that file of the newest `version_N` of the name that has one; any checkpoint is also named
  by its path.
- A fit from a checkpoint of a run resumes that run, in its folder, and only as the same recipe: the run's config.yaml
  against this command's, a difference refused in one line naming the options (configs.py).
- Every file a run writes in its folder is known here (`run_files`: each part's `filename`, a ModelCheckpoint's
  `dirpath`/`filename`/`save_last`, the saved config, the logger's files); options that make two of them one path, one
  a folder of another, or lead one out of the folder, are one line before the folder is claimed.
- An evaluation of a run's checkpoint writes into that run (the caller re-parses with its config.yaml as the first
  config: see RunsCLI.parse_arguments); of a loose checkpoint, into a new run of the name.
- A run is the folder its checkpoint lies in, for a resume and an evaluation alike (place), whatever its config.yaml's
  logger settings say.
"""

import contextlib
import itertools
import os
import re
import sys
from fnmatch import fnmatchcase
from pathlib import Path

from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger, WandbLogger

from lightning_runs.checkpoints.checkpoint_io import read_checkpoint
from lightning_runs.checkpoints.sharded import check_whole, is_checkpoint, is_sharded
from lightning_runs.cli.class_paths import refuse_local_code
from lightning_runs.configs import differences
from lightning_runs.console import say
from lightning_runs.distributed import launched_as_rank_zero
from lightning_runs.errors import UsageError
from lightning_runs.loggers.csv_run_logger import CSVRunLogger
from lightning_runs.loggers.run_folder import FolderLogger
from lightning_runs.run_folders import (
    CHECKPOINTS,
    RUNS,
    RunFolder,
    abandoned,
    check_folder_name,
    checkpoint_in,
    read_run_data,
    read_summary,
    run_dir,
    run_of_checkpoint,
)

# The loggers that write into `<save_dir>/<name>/version_N`, the folder every run's files go in, and keep it whole
# when a resume or a test reopens it (Lightning's CSVLogger deletes the run's metrics.csv then; CSVRunLogger appends).
FOLDER_LOGGERS = (TensorBoardLogger, CSVRunLogger, FolderLogger)


def logger_args(config):
    """The configured logger's init_args, where it is one that keeps a run folder; else a one-line refusal: every run's
    files (config, checkpoints, summary) go in runs/<name>/version_N, never the working directory."""
    logger = config.trainer.logger
    logger = logger[0] if isinstance(logger, list) and len(logger) == 1 else logger
    found = imported(getattr(logger, "class_path", None))  # a parsed class's Namespace; True, None: no class path
    if not (isinstance(found, type) and issubclass(found, FOLDER_LOGGERS)):
        raise UsageError(
            f"--trainer.logger {getattr(logger, 'class_path', logger)}: a run writes into runs/<name>/version_N through"
            " one logger that keeps that folder whole across resumes and tests: TensorBoardLogger or one of"
            " lightning_runs.loggers (CSVRunLogger for CSV files)"
        )
    config.trainer.logger = logger
    return logger.init_args


def name_run(config, default: str) -> None:
    args = logger_args(config)
    if config.trainer.get("default_root_dir") and args.get("save_dir") == RUNS:  # Lightning's root for everything
        args.save_dir = str(config.trainer.default_root_dir)
    files = [file for file in config.get("config") or [] if file is not None]  # None: a config given as text
    given = config.get("name")  # '' is a name given, refused below, never the default
    args.name = given if given is not None else args.get("name") or (Path(str(files[0])).stem if files else default)
    config.name = args.name
    for key in ("name", "version", "sub_dir"):  # each one folder of runs/<name>/version_N, never a way out of it
        value = args.get(key)
        if value is not None and not isinstance(value, int):
            check_folder_name("--name" if key == "name" else f"--trainer.logger.init_args.{key}", str(value))
    if not str(args.get("save_dir") or "").strip():
        raise UsageError("--trainer.logger.init_args.save_dir '': must name the runs root, a folder (runs by default)")


def resolve_checkpoint(subcommand: str, config) -> Path | None:
    """`config.ckpt_path` as a file of a run (or a loose one), `last`/`best` resolved; None: a fit from step 0."""
    given, args = config.get("ckpt_path"), config.trainer.logger.init_args
    if given in ("last", "best"):
        # The newest version with one; a run pinned by hand (a SLURM job's): its own file, or a first fit.
        pinned = args.get("version") is not None
        where = run_dir(args.save_dir, args.name, args.version) if pinned else Path(args.save_dir) / args.name
        found = checkpoint_in(where, f"{given}.ckpt")
        wanted = (where if pinned else where / "version_*") / CHECKPOINTS / f"{given}.ckpt"
        if found is None and subcommand != "fit":
            raise UsageError(f"--ckpt_path {given}: no {wanted}; train first")
        if found is None:
            say(f"No {wanted} yet: starting from step 0.")
        config.ckpt_path = None if found is None else str(found)
    if config.ckpt_path is None:
        return None
    path = Path(config.ckpt_path)
    check_whole(path) if is_sharded(path) else read_checkpoint(path)  # a file that is none is one line, here
    if subcommand != "fit" and (run := run_of_checkpoint(path)):  # a fit's, once its resume is checked (resume)
        place(config, run)
    return path


def place(config, run: Path) -> None:
    """The command writes into `run`, the folder its checkpoint lies in, not where the run's config.yaml says it was
    started: a run copied, moved or found by another name keeps its files together, and no ghost folder is made."""
    args = config.trainer.logger.init_args
    args.save_dir, args.name, args.version = relative(run.parent.parent), run.parent.name, _version(run)
    config.name = args.name


def resume(config, path: Path, current: dict) -> None:
    """A fit from `path` continues its run, in its folder, as the same recipe (`current`: this command's config as
    it would be saved); a finished one is not resumed."""
    refuse_local_code(read_checkpoint(path).get("hyper_parameters"), path)  # before Lightning imports its _class_path
    if "optimizer_states" not in read_checkpoint(path):
        raise UsageError(
            f"--ckpt_path {path}: the weights alone (save_weights_only); a fit cannot continue it, a test can"
        )
    run = run_of_checkpoint(path)
    if run is None and config.get("init_from"):  # its weights over the other checkpoint's optimizer and loop state
        raise UsageError(f"--init_from starts a new run, --ckpt_path {path} continues its state: give one of them")
    if run is None:
        return say(f"fit from {path} (a checkpoint outside any run): a new run of its weights and state")
    saved = read_run_data(run / "config.yaml")
    changed = differences(saved, current)
    if changed:
        raise UsageError(
            f"{'; '.join(changed[:4])}{f'; {len(changed) - 4} more' if len(changed) > 4 else ''}: a resumed run"
            f" continues {relative(run)} as it was started; drop --ckpt_path to start a new run with these"
        )
    status = None
    with contextlib.suppress(OSError, ValueError):
        status = read_summary(run / "summary.json").get("status")
    if status == "completed":
        raise UsageError(f"--ckpt_path {path}: its run {relative(run)} already finished; start a new run to train more")
    last, step = run / CHECKPOINTS / "last.ckpt", read_checkpoint(path).get("global_step", 0)
    if is_checkpoint(last) and not last.samefile(path) and read_checkpoint(last).get("global_step", 0) > step:
        raise UsageError(  # resuming would train those steps again, over the run's best and last checkpoints
            f"--ckpt_path {path}: its run went on to step {read_checkpoint(last)['global_step']}; a fit resumes a run"
            " where it stopped (--ckpt_path last), or drop --ckpt_path for a new run"
        )
    place(config, run)
    say(f"fit resumes {relative(run)} from {path.name} (step {step})")


def claim(subcommand: str, config) -> RunFolder | None:
    """The command's run folder, claimed on the process that becomes rank zero only (DDP's other ranks write nothing):
    a new `version_N`, or the run given by its version (a resume, an evaluation of one of its checkpoints)."""
    args = config.trainer.logger.init_args
    if config.trainer.fast_dev_run or not launched_as_rank_zero():
        return None
    folder, checkpoint = run_dir(args.save_dir, args.name, args.version), config.get("ckpt_path")
    own = checkpoint is not None and (run_of_checkpoint(Path(checkpoint)) or Path()).resolve() == folder.resolve()
    # Only the run's own checkpoint writes into it; a pinned run killed before its first checkpoint is anyone's.
    again = args.version is not None and folder.exists() and not own
    if again and not abandoned(folder):
        raise UsageError(
            f"{folder} already exists and belongs to another run; resume it with --ckpt_path"
            f" {folder / CHECKPOINTS / 'last.ckpt'}, or drop --trainer.logger.init_args.version for a new folder"
        )
    run = RunFolder.claim(Path(args.save_dir) / args.name, args.version)  # refused while a command holds it
    args.version = _version(run.path)
    if again:
        say(f"{relative(folder)}: its run ended before a first checkpoint; started again from step 0, its files gone")
    return run


# Each logger's files in the run folder (a glob where the name varies); the library's loggers subclass these, and the
# MLflow and W&B ones keep their service's run id in their `ID_FILE` there too.
LOGGED = {TensorBoardLogger: ("hparams.yaml", "events.out.tfevents.*"), CSVLogger: ("hparams.yaml", "metrics.csv")}
LOGGED[WandbLogger] = ("wandb",)  # W&B's own folder of the run


def run_files(config, parts: list[str], config_filename: str, run: Path) -> dict[str, Path]:
    """What names each file (an option, or the logger) -> its path in `run`, a glob where Lightning fills in a
    `{metric}`. `parts`: the config's keys of the Trainer's callbacks (the parser's `callback_keys`)."""
    logger = imported(config.trainer.logger.class_path)
    folder = run / (config.trainer.logger.init_args.get("sub_dir") or "")  # the logger's log_dir: all but checkpoints
    logged = [name for base, names in LOGGED.items() if issubclass(logger, base) for name in names]
    files = {f"the logger's {name}": folder / name for name in [*logged, getattr(logger, "ID_FILE", None)] if name}
    saved = Path(config_filename)  # and config.<subcommand>[-N].yaml, of each later command in the run
    files |= {f"the saved {name}": folder / name for name in (saved, f"{saved.stem}.*{saved.suffix}")}
    named = [(f"--{key}", config.get(key)) for key in parts]
    for key, part in named + [(f"--trainer.callbacks[{i}]", c) for i, c in enumerate(config.trainer.callbacks or [])]:
        cls, args = imported(part.get("class_path")) if part else None, (part or {}).get("init_args") or {}
        if isinstance(cls, type) and issubclass(cls, ModelCheckpoint):  # its own names: Lightning's, or the class's
            where = Path(dirpath) if (dirpath := args.get("dirpath")) else run / CHECKPOINTS
            name = re.sub(r"\{[^}]*\}", "*", args.get("filename") or "{epoch}-{step}")
            names = {f"{key}.filename {args.get('filename')}": name}
            names |= {f"{key}.save_last": cls.CHECKPOINT_NAME_LAST} if args.get("save_last") else {}
            files |= {what: where / f"{name}{cls.FILE_EXTENSION}" for what, name in names.items()}
        elif (filename := args.get("filename")) and key[2:] in parts:  # none or empty: the part says what it takes
            files[f"{key}.filename {filename}"] = folder / filename
    return files


def check_run_files(config, parts: list[str], config_filename: str) -> None:
    """Before the run folder is claimed: no two of its files one path, or one a folder of another, none outside it
    (a summary named `checkpoints/last.ckpt` wrote its JSON over the last checkpoint; `last` and `best` given one name
    kept one file for both). `config`: a command's parsed config, its run named (name_run)."""
    args = config.trainer.logger.init_args
    run = run_dir(args.save_dir, args.name, "version_N" if args.version is None else args.version).resolve()
    files = {}
    for what, path in run_files(config, parts, config_filename, run).items():
        if run not in path.resolve().parents:
            raise UsageError(f"{what}: {relative(path.resolve())} lies outside the run's folder; name a file in it")
        files[what] = str(path.resolve().relative_to(run))
    for (a, one), (b, other) in itertools.combinations(files.items(), 2):
        for folder, file in ((one, other), (other, one)):
            if any(fnmatchcase(str(parent), folder) for parent in Path(file).parents):
                raise UsageError(f"{a} and {b}: {folder} would be a file and a folder ({file}); give each its own name")
        if one == other or fnmatchcase(one, other) or fnmatchcase(other, one):
            raise UsageError(f"{a} and {b}: both are {one} in the run's folder; give each its own name")


def relative(path: Path) -> str:
    """Relative to the working directory where inside it, as a fresh run's paths are written."""
    return os.path.relpath(path) if path.resolve().is_relative_to(Path.cwd().resolve()) else str(path)


def _version(run: Path) -> int | str:
    return int(run.name.removeprefix("version_")) if run.name.removeprefix("version_").isdigit() else run.name


def imported(class_path: str | None):
    module, _, name = (class_path or "").rpartition(".")
    return getattr(sys.modules.get(module), name, None)  # imported by the parser already
