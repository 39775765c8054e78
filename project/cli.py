"""`python -m project {fit,validate,test,predict}`: which callbacks every run has, their defaults, and the wiring.

The recipe is the defaults of the signatures (networks.py, model.py, data.py) and of `TRAINER_DEFAULTS` below,
each with its reason: `python -m project fit` trains exactly what `make train` trains. The machinery these hooks
call (run folders, resume, fault handling, summaries) lives in project/core.
"""

import inspect
import os
import sys
from collections.abc import Sequence

import lightning as L
from lightning.fabric.utilities.exceptions import MisconfigurationException
from lightning.pytorch.callbacks import Callback, EarlyStopping, LearningRateMonitor
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI

from project.core import placement, preflight
from project.core.checkpoints import BestCheckpoint, RandomState, RunCheckpoint
from project.core.console import add_quiet_option, apply_quiet, library_noise_silenced
from project.core.contract import required
from project.core.errors import UsageError, main
from project.core.faults import CheckpointOnSignal, GradientCheck
from project.core.figures import Figures, Histograms
from project.core.monitors import LossMonitor, SampleRateMonitor
from project.core.parser import ProjectParser, own_defaults
from project.core.predictions import PredictionWriter
from project.core.provenance import SaveConfigInRun
from project.core.report import report_fit
from project.core.resume import TrainingLength, keys_given, with_checkpoint_data
from project.core.summary import RunSummary
from project.data import DigitsDataModule
from project.model import DigitsClassifier

TRAINER_DEFAULTS = {
    "accelerator": "cpu",  # 1,797 images of 8x8: on a GPU, kernel launches cost more than the arithmetic
    "devices": 1,
    # The cosine schedule's length: 36 cross-validation errors vs 50 at 30 epochs (channels (32, 64), docs/results.md).
    "max_epochs": 50,
    "log_every_n_steps": 1,  # 22 steps an epoch: Lightning's default of 50 would log no training step at all
    # Checkpoints written next to their target, fsynced and renamed (a kill never leaves a torn file), in a
    # background thread so that training does not wait for the disk.
    "plugins": [{"class_path": "project.core.checkpoints.BackgroundCheckpointIO"}],
    "logger": {
        "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
        # name null: named for what the run trains (project/core/naming.py), digits for this recipe
        "init_args": {"save_dir": "runs", "name": None, "default_hp_metric": False},
    },
}
MODEL = DigitsClassifier  # the LightningModule every subcommand builds, and the tools load (export)
# Left out of run names: a run of the default network is named for its data alone.
_network = inspect.signature(MODEL).parameters["network"].default
DEFAULT_NETWORK = f"{_network.__module__}.{_network.__qualname__}"
DEFAULT_DATA = f"{DigitsDataModule.__module__}.{DigitsDataModule.__qualname__}"


class DigitsCLI(LightningCLI):
    def init_parser(self, **kwargs) -> ProjectParser:
        parser = super().init_parser(**kwargs)
        parser.concise = True  # the main and the subcommand parsers: their errors are the ones users read
        return parser

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.set_defaults({"data": {"class_path": DEFAULT_DATA}})
        # What the model needs from the data, whatever the DataModule (docs/contract.md); a part it lacks is one line.
        parser.link_arguments("data", "model.num_classes", compute_fn=required("num_classes"), apply_on="instantiate")
        parser.link_arguments("data", "model.input_shape", compute_fn=required("sample_shape"), apply_on="instantiate")
        parser.add_lightning_class_args(EarlyStopping, "early_stopping")
        # Longer than the schedule, as in the recipe studies: at 10 (or 30), val/loss noise in the high-LR phase
        # stopped runs before the low-LR end. It still stops a run whose val/loss turns NaN.
        parser.set_defaults({"early_stopping.monitor": "val/loss", "early_stopping.patience": 100})
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
        parser.add_lightning_class_args(RunCheckpoint, "last_checkpoint")
        parser.set_defaults({"last_checkpoint.filename": "last", "last_checkpoint.enable_version_counter": False})
        parser.add_lightning_class_args(LearningRateMonitor, "lr_monitor")
        parser.set_defaults({"lr_monitor.logging_interval": "step"})
        parser.add_lightning_class_args(PredictionWriter, "prediction_writer")
        # Exact resume and clean stops: RNG state in every checkpoint, NaN/Inf stops the run, SIGTERM and Ctrl-C save.
        parser.add_lightning_class_args(RandomState, "random_state")
        parser.add_lightning_class_args(TrainingLength, "training_length")  # a resume keeps the schedule's length
        parser.add_lightning_class_args(GradientCheck, "grad_norm")
        parser.add_lightning_class_args(CheckpointOnSignal, "checkpoint_on_signal")
        # Observability: scalars Lightning lacks, pictures every N epochs, and <run>/summary.json.
        parser.add_lightning_class_args(LossMonitor, "loss")
        parser.add_lightning_class_args(SampleRateMonitor, "throughput")
        parser.add_lightning_class_args(Figures, "figures")
        parser.add_lightning_class_args(Histograms, "histograms")
        parser.add_lightning_class_args(RunSummary, "summary")
        add_quiet_option(parser)
        parser.add_argument(
            "--test_best", type=bool, default=False, help="fit only: then test the best checkpoint, in this process"
        )

    def parse_arguments(self, parser: LightningArgumentParser, args) -> None:
        given = keys_given(sys.argv[1:] if args is None else args)  # what the user typed, before the line below
        super().parse_arguments(
            parser, with_checkpoint_data(list(sys.argv[1:] if args is None else args), DEFAULT_DATA)
        )
        # Before LightningCLI reads the checkpoint's hyperparameters, so `last`/`best` are real paths by then.
        if self.config.get("subcommand"):
            subcommand = self.config.subcommand
            config = self.config[subcommand]
            apply_quiet(config)
            preflight.check_options(config)
            placement.name_run(config, DEFAULT_NETWORK)
            chosen = placement.resolve_checkpoint(subcommand, config)
            own_defaults(config.get("data"), DEFAULT_DATA, given, "data")
            placement.adopt_checkpoint_run(subcommand, config, given, self.model_class, chosen)

    def before_instantiate_classes(self) -> None:
        config = self.config[self.subcommand]
        self._claimed = placement.claim_run_folder(self.subcommand, config)
        filename = placement.config_filename(self.subcommand, config)
        if filename is not None:
            self.save_config_kwargs["config_filename"] = filename

    def instantiate_classes(self) -> None:
        try:
            super().instantiate_classes()
            preflight.check_data(self.subcommand, self.trainer, self.datamodule, self.model)
            preflight.check_checkpoint_fits(self.model, self.config[self.subcommand].get("ckpt_path"))
        # An argument check in an __init__ (split fractions summing past 1, a bad data file), the Trainer's own
        # (an accelerator this machine lacks), or a split too small: nothing ran, the claimed folder goes.
        except (ValueError, MisconfigurationException) as error:
            placement.release_run_folder(self._claimed)
            raise UsageError(str(error.__cause__ or error)) from None  # the class's own words, not jsonargparse's

    def after_fit(self) -> None:
        # `make train`: the test of the best checkpoint without a second start-up (imports, parsing, data).
        best = self.trainer.checkpoint_callback
        tested = bool(self.config.fit.test_best and best is not None and best.best_model_path)
        if tested:
            self.trainer.test(self.model, datamodule=self.datamodule, ckpt_path=best.best_model_path)
        report_fit(self.trainer, tested)  # last, so that it is what the terminal ends with

    def _run_subcommand(self, subcommand: str) -> None:
        try:
            super()._run_subcommand(subcommand)
        finally:  # LightningCLI has no hook that runs however the subcommand ends
            placement.release_run_folder(self._claimed)


def cli_main(args: list[str] | None = None, callbacks: Sequence[Callback] = ()) -> DigitsCLI:
    """`callbacks`: objects a config cannot build, added to every Trainer (the sweep's pruning callback).
    Raises the typed errors of project.core.errors; `main()` turns them into exit codes."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # tensorboard's optional TensorFlow import is noisy
    # Lightning's progress bar redraws after every batch: 7% of this job's fit phase (python -m benchmarks.levers).
    # Every 10th batch (and each epoch's last) is still several redraws a second; TQDM_MINITERS=1 restores it.
    os.environ.setdefault("TQDM_MINITERS", "10")
    with library_noise_silenced():
        return DigitsCLI(
            MODEL,
            L.LightningDataModule,  # any DataModule, chosen with --data (a class path); DigitsDataModule by default
            subclass_mode_data=True,
            seed_everything_default=0,
            trainer_defaults={**TRAINER_DEFAULTS, "callbacks": list(callbacks)},  # appended to the config's
            parser_class=ProjectParser,
            save_config_callback=SaveConfigInRun,  # into the run folder of any logger (Lightning #19441)
            args=args,
        )


def run() -> None:
    main(cli_main)
