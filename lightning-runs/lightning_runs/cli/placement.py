"""Which run folder a command writes into: a new `runs/<name>/version_N` for a fresh fit, the checkpoint's own run
for a resume or an evaluation, and `--ckpt_path last|best` resolved to a file of this recipe's run (recipes.py)
before anything reads it.

Lightning's default would start a new version folder, look for `last` there, find nothing and train from step 0
without complaint; and it would reuse a folder a finished run still owns.
"""

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from lightning_runs.checkpoints.class_paths import imported_class
from lightning_runs.checkpoints.loading import read_checkpoint
from lightning_runs.checkpoints.sharded import is_checkpoint
from lightning_runs.cli.resume import reconcile
from lightning_runs.console import say
from lightning_runs.distributed import launched_as_rank_zero
from lightning_runs.errors import UsageError
from lightning_runs.folders.layout import (
    RUNS,
    claim_version,
    free_path,
    lock_run,
    run_dir,
    run_of_checkpoint,
    unlock_run,
)
from lightning_runs.folders.naming import check_names, run_name
from lightning_runs.folders.recipes import choose
from lightning_runs.loggers import CSVRunLogger, RunFolder


def keeps_run_folder(logger) -> bool:
    """Whether the configured logger writes into `<save_dir>/<name>/version_N`, which the placement then chooses:
    TensorBoard's, CSV's, and the MLflow and W&B loggers of loggers/."""
    found = logger_class(logger)
    return isinstance(found, type) and issubclass(found, (TensorBoardLogger, CSVLogger, RunFolder))


def logger_class(logger) -> type | None:
    return imported_class(getattr(logger, "class_path", None))  # imported by the parser already


def name_run(config, default_model: str, default_network: str | None, given: set[str] = frozenset()) -> None:
    """Every run writes through a logger into its own folder under the runs root, named for what it trains
    (naming.py) unless given a name; names that lead out of their folder are refused. `--trainer.default_root_dir`
    is the runs root where the logger's save_dir is left at its default, as Lightning's own logger takes it."""
    logger = config.trainer.logger
    if isinstance(logger, list) and len(logger) != 1:  # each would choose its own version_N: one run, two folders
        raise UsageError(
            f"--trainer.logger: a list of {len(logger)} loggers would split one run across as many folders; give one"
        )
    logger = config.trainer.logger = logger[0] if isinstance(logger, list) else logger
    if not logger:
        # Lightning would write config.yaml and checkpoints into the working directory (False) or start its own
        # lightning_logs/ there (null); the LR monitor, summary.json and the figures need a logger anyway.
        given = "false" if logger is False else "null"
        raise UsageError(
            f"--trainer.logger {given}: every run writes into runs/<name>/version_N through its logger; keep the"
            " default, or give another with --trainer.logger <class path>"
        )
    if logger_class(logger) is CSVLogger:
        # Lightning's deletes the metrics.csv of a folder it reopens: a test or a resume into the run would cut the
        # fit's rows. The library's appends, and takes the same arguments.
        logger.class_path = f"{CSVRunLogger.__module__}.{CSVRunLogger.__qualname__}"
    if "trainer.default_root_dir" in given and keeps_run_folder(logger) and logger.init_args.save_dir == RUNS:
        logger.init_args.save_dir = str(config.trainer.default_root_dir)
    if keeps_run_folder(logger) and logger.init_args.name is None:
        logger.init_args.name = run_name(config, default_model, default_network, Path(logger.init_args.save_dir))
    check_names(config)


def resolve_checkpoint(subcommand: str, config, given: set[str]) -> str | None:
    """`--ckpt_path last|best` becomes that file of the newest run of this config's recipe (recipes.py), or None: a
    first fit. `given`: the settings typed or in a --config file. Returns how the file was chosen, for the line that
    says which checkpoint the command uses."""
    logger, ckpt_path = config.trainer.logger, config.get("ckpt_path")
    if ckpt_path not in ("last", "best"):
        return None
    if not keeps_run_folder(logger):
        raise UsageError(f"--ckpt_path {ckpt_path} looks in the run folders of this project's loggers; give a file")
    if logger.init_args.version is not None:
        return resolve_in_given_run(subcommand, config, ckpt_path)
    experiment = Path(logger.init_args.save_dir) / logger.init_args.name
    found = choose(experiment, ckpt_path, config, subcommand, given)
    if found is None and subcommand != "fit":
        raise UsageError(
            f"--ckpt_path {ckpt_path}: no {experiment}/version_*/checkpoints/{ckpt_path}.ckpt;"
            " train first, or give a checkpoint file"
        )
    if found is None:
        say(f"No {experiment}/version_*/checkpoints/{ckpt_path}.ckpt yet: starting from step 0.")
    config.ckpt_path = None if found is None else str(found.checkpoint)
    return f"--ckpt_path {ckpt_path}: the newest run of {experiment} with this recipe"


def resolve_in_given_run(subcommand: str, config, ckpt_path: str) -> str:
    """`--ckpt_path last|best` with a version given by hand: that run's own file, or None for a first fit into it.
    A SLURM script pins one run per job this way: a requeued job resumes its own run, never another job's newer one."""
    log_args = config.trainer.logger.init_args
    folder = run_dir(log_args.save_dir, log_args.name, log_args.version)
    wanted = folder / "checkpoints" / f"{ckpt_path}.ckpt"
    if not is_checkpoint(wanted) and subcommand != "fit":
        raise UsageError(f"--ckpt_path {ckpt_path}: no {wanted}; train first, or give a checkpoint file")
    if not is_checkpoint(wanted):
        say(f"No {wanted} yet: starting from step 0.")
    config.ckpt_path = str(wanted) if is_checkpoint(wanted) else None
    return f"--ckpt_path {ckpt_path}: that of {folder}"


def adopt_checkpoint_run(subcommand: str, config, given: set[str], chosen: str | None = None) -> None:
    """The checkpoint's settings win (see resume.py), and the command writes into the run that saved it, when that
    run lies under the runs root (a checkpoint from elsewhere gets a new run folder, never its own parent). Says
    which checkpoint it is (`chosen`: how --ckpt_path picked it) and where the outputs go."""
    if config.get("ckpt_path") is None:
        if subcommand != "fit":
            say(f"{subcommand} without --ckpt_path: the model's initial, untrained weights")
        return
    checkpoint = read_checkpoint(Path(config.ckpt_path), imported_class(config.model.class_path))
    reconcile(subcommand, config, checkpoint, given)
    # Lightning's `epoch` is the index of the epoch it was saved in; counted from 1, as summary.json's epochs are.
    saved = f"epoch {checkpoint.get('epoch', -1) + 1}, step {checkpoint.get('global_step')}"
    run = run_of_checkpoint(Path(config.ckpt_path))
    logger = config.trainer.logger
    line = f"{subcommand} from {config.ckpt_path} ({'; '.join(filter(None, [chosen, saved]))})"
    if not keeps_run_folder(logger):
        return say(line)
    root = logger.init_args.save_dir
    if run is not None and run_dir(*run).resolve().is_relative_to(Path(root).resolve()):
        logger.init_args.save_dir, logger.init_args.name, logger.init_args.version = run
        line += f"; outputs go to {run_dir(*run)}"
    else:
        outside = "" if run is None else f" (its own run lies outside {root}/)"
        line += f"; outputs go to a new folder in {Path(root) / logger.init_args.name}{outside}"
    say(line)


@dataclass
class Claim:
    """The run folder a command writes into, locked for it; `created`: made by this command, which removes it again
    if it fails before writing anything, with the empty parents it made up to `kept`, which existed before."""

    folder: Path
    lock: int
    created: bool
    kept: Path


def claim_run_folder(subcommand: str, config) -> Claim | None:
    """The command's run folder, claimed after the config and checkpoint parsed (a rejected command leaves no folder),
    on the process that becomes rank zero only: a new `version_N`, or the checkpoint's own run for a resume or an
    evaluation. A version given by hand must be a new folder: only its own run's checkpoint writes into an old one.
    None when nothing was claimed (fast_dev_run writes nothing; other ranks; another logger)."""
    logger = config.trainer.logger
    if not keeps_run_folder(logger) or config.trainer.fast_dev_run or not launched_as_rank_zero():
        return None
    log_args = logger.init_args
    kept = _existing_ancestor(Path(log_args.save_dir) / log_args.name)
    if log_args.version is None:
        log_args.version = claim_version(Path(log_args.save_dir) / log_args.name)
        folder, created = run_dir(log_args.save_dir, log_args.name, log_args.version), True
    else:
        folder = run_dir(log_args.save_dir, log_args.name, log_args.version)
        ckpt_path = config.get("ckpt_path")
        created = ckpt_path is None or Path(ckpt_path).resolve().parent.parent != folder.resolve()
        if created:
            try:
                folder.mkdir(parents=True)
            except FileExistsError:
                raise UsageError(
                    f"{folder} already exists and belongs to another run; only resuming it writes there"
                    f" (--ckpt_path {folder / 'checkpoints' / 'last.ckpt'}); drop --trainer.logger.init_args.version"
                    " for a new folder"
                ) from None
    return Claim(folder, lock_run(folder), created, kept)


def _existing_ancestor(path: Path) -> Path:
    """The nearest folder at or above `path` that exists already: the user's (an empty runs/ of their own too)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def config_filename(subcommand: str, config) -> str | None:
    """A resumed fit or an evaluation in an existing run keeps every earlier file: its config is saved beside them
    as config.<subcommand>[-N].yaml. None: the default config.yaml."""
    logger = config.trainer.logger
    if not keeps_run_folder(logger) or logger.init_args.version is None:
        return None
    folder = run_dir(logger.init_args.save_dir, logger.init_args.name, logger.init_args.version)
    if (folder / "config.yaml").exists():
        return free_path(folder / f"config.{subcommand}.yaml").name
    return None


def release_run_folder(claim: Claim | None, refused: bool = False) -> None:
    """Let go of the folder; one this command made and left empty (nothing ran), or wrote only its start into (no
    checkpoint) before the command was `refused` (a UsageError: a watched metric is not logged), is removed again,
    with the empty parents it created."""
    if claim is None:
        return
    unlock_run(claim.lock)
    if not claim.created:
        return
    folder, kept = claim.folder.absolute(), claim.kept
    if refused and not any(folder.rglob("*.ckpt")):  # never a run that trained (test_best refused after its fit)
        shutil.rmtree(folder, ignore_errors=True)  # made by this command: everything in it is its own
        folder = folder.parent
    with contextlib.suppress(OSError):  # something was written: keep it
        while folder != kept and folder.is_relative_to(kept):
            folder.rmdir()
            folder = folder.parent
