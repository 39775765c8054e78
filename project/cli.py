"""`python -m project {fit,validate,test,predict}`: a LightningCLI whose runs live in runs/<name>/version_N."""

import os
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from jsonargparse import ArgumentError
from lightning.pytorch.callbacks import Callback, EarlyStopping, LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI
from lightning.pytorch.utilities import rank_zero_info, rank_zero_only
from lightning.pytorch.utilities.exceptions import SIGTERMException

from project.callbacks import PredictionWriter
from project.checkpoints import BestCheckpoint, RandomState, read_checkpoint
from project.data import ArrayDataModule, DigitsDataModule
from project.faults import SIGTERM_EXIT_CODE, CheckpointOnSigterm, StopOnNonFinite
from project.figures import Figures, Histograms
from project.model import DigitsClassifier
from project.monitors import GradNormMonitor, SampleRateMonitor
from project.quiet import add_quiet_option, apply_quiet
from project.resume import keys_given, reconcile
from project.runs import claim_version, free_path, newest_checkpoint, run_dir, run_of_checkpoint
from project.summary import RunSummary

# Lightning 2.6 on recent torch warns about its own use of a deprecated torch API on every run: not ours to fix,
# and it would be the first line a user reads.
warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")


class DigitsCLI(LightningCLI):
    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.set_defaults({"data": {"class_path": f"{DigitsDataModule.__module__}.{DigitsDataModule.__name__}"}})
        parser.link_arguments("data.num_classes", "model.num_classes", apply_on="instantiate")
        parser.add_lightning_class_args(EarlyStopping, "early_stopping")
        parser.set_defaults({"early_stopping.monitor": "val/loss", "early_stopping.patience": 10})
        # Two checkpoints in <run>/checkpoints: `best` by val/acc (ties to the later epoch) and `last` after every
        # epoch. (`save_last` on the best one is rewritten only when val/acc improves, so it falls epochs behind.)
        # Both save at the end of the training epoch, after validation and early stopping, so their callback
        # state is current.
        parser.add_lightning_class_args(BestCheckpoint, "checkpoint")
        parser.set_defaults(
            {
                "checkpoint.monitor": "val/acc",
                "checkpoint.mode": "max",
                "checkpoint.filename": "best",
                "checkpoint.enable_version_counter": False,
            }
        )
        parser.add_lightning_class_args(ModelCheckpoint, "last_checkpoint")
        parser.set_defaults({"last_checkpoint.filename": "last", "last_checkpoint.enable_version_counter": False})
        parser.add_lightning_class_args(LearningRateMonitor, "lr_monitor")
        parser.set_defaults({"lr_monitor.logging_interval": "step"})
        parser.add_lightning_class_args(PredictionWriter, "prediction_writer")
        # Exact resume and clean stops: RNG state in every checkpoint, NaN/Inf stops the run, SIGTERM saves.
        parser.add_lightning_class_args(RandomState, "random_state")
        parser.add_lightning_class_args(StopOnNonFinite, "stop_on_non_finite")
        parser.add_lightning_class_args(CheckpointOnSigterm, "checkpoint_on_sigterm")
        # Observability: scalars Lightning lacks, pictures every N epochs, and <run>/summary.json.
        parser.add_lightning_class_args(GradNormMonitor, "grad_norm")
        parser.add_lightning_class_args(SampleRateMonitor, "throughput")
        parser.add_lightning_class_args(Figures, "figures")
        parser.add_lightning_class_args(Histograms, "histograms")
        parser.add_lightning_class_args(RunSummary, "summary")
        add_quiet_option(parser)

    def parse_arguments(self, parser: LightningArgumentParser, args) -> None:
        super().parse_arguments(parser, args)
        # Before LightningCLI reads the checkpoint's hyperparameters, so `last`/`best` are real paths by then.
        if self.config.get("subcommand"):
            apply_quiet(self.config[self.config.subcommand])
            given = keys_given(sys.argv[1:] if args is None else args)
            try:
                self._place_run(self.config.subcommand, self.config[self.config.subcommand], given)
            except ValueError as error:
                _fail(str(error))

    def _place_run(self, subcommand: str, config, given: set[str]) -> None:
        """Resolve `--ckpt_path last|best` and put the command's outputs in the run that owns the checkpoint.

        Lightning's default would start a new version folder, look for `last` there, find nothing and train
        from step 0 without complaint.
        """
        logger, ckpt_path = config.trainer.logger, config.get("ckpt_path")
        if ckpt_path in ("last", "best"):
            if not _is_tensorboard(logger):
                raise ValueError(f"--ckpt_path {ckpt_path} looks in runs/ of the TensorBoardLogger; give a file")
            experiment = Path(logger.init_args.save_dir) / logger.init_args.name
            found = newest_checkpoint(experiment, ckpt_path)
            if found is None and subcommand != "fit":
                raise ValueError(
                    f"--ckpt_path {ckpt_path}: no {experiment}/version_*/checkpoints/{ckpt_path}.ckpt;"
                    " train first (make train) or give a checkpoint file"
                )
            if found is None:
                rank_zero_info(f"No {experiment}/version_*/checkpoints/last.ckpt yet: starting from step 0.")
            config.ckpt_path = ckpt_path = None if found is None else str(found)
        if ckpt_path is None:
            return
        checkpoint = read_checkpoint(Path(ckpt_path))
        reconcile(subcommand, config, checkpoint, given)
        run = run_of_checkpoint(Path(ckpt_path))
        if run is not None and _is_tensorboard(logger):
            logger.init_args.save_dir, logger.init_args.name, logger.init_args.version = run
            rank_zero_info(f"{subcommand} from {ckpt_path}; outputs go to {run_dir(*run)}")
            # Continuing in the run's own folder is the point; Lightning warns about it as if it were a mistake.
            warnings.filterwarnings("ignore", message=r"Checkpoint directory .* exists and is not empty")

    def before_instantiate_classes(self) -> None:
        config = self.config[self.subcommand]
        logger = config.trainer.logger
        if not _is_tensorboard(logger) or config.trainer.fast_dev_run:
            return
        log_args = logger.init_args
        if log_args.version is None:
            if self.subcommand == "fit" and _launched_as_rank_zero():
                # Claimed only now, after the config and checkpoint parsed: a rejected command leaves no folder.
                log_args.version = claim_version(Path(log_args.save_dir) / log_args.name)
                self._claimed = run_dir(log_args.save_dir, log_args.name, log_args.version)
            return  # evaluation without a checkpoint gets Lightning's next version
        # A resumed fit or an evaluation in an existing run keeps every earlier file: its config is saved
        # beside them as config.<subcommand>[-N].yaml.
        folder = run_dir(log_args.save_dir, log_args.name, log_args.version)
        if (folder / "config.yaml").exists():
            self.save_config_kwargs["config_filename"] = free_path(folder / f"config.{self.subcommand}.yaml").name

    def instantiate_classes(self) -> None:
        try:
            super().instantiate_classes()
        except ValueError as error:  # an argument check in an __init__, such as split fractions summing past 1
            if getattr(self, "_claimed", None) is not None:
                os.removedirs(self._claimed)  # still empty, as are the parents it may have created: nothing ran
            _fail(str(error.__cause__ or error))  # the DataModule's own message, not jsonargparse's wrapping of it


def _launched_as_rank_zero() -> bool:
    """Whether this process will be global rank zero, before the Trainer exists to say so.

    `rank_zero_only.rank` comes from the launcher's variables (torchrun's RANK, SLURM_PROCID, LOCAL_RANK of
    Lightning's own children); Lightning's multi-node launch starts every node's first process with only NODE_RANK.
    """
    return rank_zero_only.rank == 0 and os.environ.get("NODE_RANK", "0") == "0"


def _is_tensorboard(logger) -> bool:
    return str(getattr(logger, "class_path", "")).endswith("TensorBoardLogger")


def _fail(message: str, code: int = 2) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def cli_main(args: list[str] | None = None, callbacks: Sequence[Callback] = ()) -> DigitsCLI:
    """`callbacks`: objects a config cannot build, added to every Trainer (the sweep's pruning callback)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # tensorboard's optional TensorFlow import is noisy
    try:
        return _build_cli(args, list(callbacks))
    except ArgumentError as error:
        # jsonargparse would print the whole usage (100+ lines) above its message: say only what is wrong.
        message = " ".join(line.strip() for line in _reason(str(error)).splitlines() if line.strip())
        _fail(f"{message} (python -m project <subcommand> --help lists the options)")
    except FloatingPointError as error:  # the run diverged; its last good checkpoint is still on disk
        _fail(str(error), code=1)
    except SIGTERMException as error:  # Lightning's would exit 0, which tells a scheduler the job is done
        _fail(str(error) or "stopped by SIGTERM", code=SIGTERM_EXIT_CODE)


# A bad option of a class chosen by class path (--data.batch_size 0) comes back as a failed match against every
# type --data allows; the reason given for the chosen class is what the user needs.
_SUBCLASS_ERROR = re.compile(
    r'Parser key "(?P<group>[\w.]+)":.*?Problem with given class_path \'[\w.]+\':\s*'
    r'(?:Parser key "(?P<key>[\w.]+)":\s*)?(?P<reason>.*?)\n\s*- ',
    flags=re.DOTALL,
)


def _reason(message: str) -> str:
    match = _SUBCLASS_ERROR.search(message)
    if match is None:
        return message
    key = match["group"] + (f".{match['key']}" if match["key"] else "")
    return f'Parser key "{key}": {match["reason"]}'


def _build_cli(args: list[str] | None, callbacks: list[Callback]) -> DigitsCLI:
    return DigitsCLI(
        DigitsClassifier,
        ArrayDataModule,  # any subclass, chosen with --data (a class path); DigitsDataModule by default
        subclass_mode_data=True,
        seed_everything_default=0,
        trainer_defaults={
            "callbacks": callbacks,  # appended to those of the config
            "max_epochs": 30,
            "log_every_n_steps": 1,  # 22 steps an epoch: the default of 50 would log no step at all
            # Checkpoints written next to their target, fsynced and renamed: a kill never leaves a torn file.
            "plugins": [{"class_path": "project.checkpoints.AtomicCheckpointIO"}],
            "logger": {
                "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
                "init_args": {"save_dir": "runs", "name": "digits", "default_hp_metric": False},
            },
        },
        parser_kwargs={name: {"exit_on_error": False} for name in ("fit", "validate", "test", "predict")}
        | {"exit_on_error": False},
        args=args,
    )
