"""The options every run has, whatever the project: the library's trainer defaults, the callbacks (each an option group
of its own: `--checkpoint.monitor`, `--figures.every_n_epochs`), `--quiet`, `--test_best`, and Lightning's progress bar
redrawn less often."""

from collections.abc import Sequence

from lightning.pytorch.callbacks import Callback, EarlyStopping, LearningRateMonitor, ProgressBar
from lightning.pytorch.cli import LightningArgumentParser

from lightning_runs.checkpoints.callbacks import BestCheckpoint, RandomState, RunCheckpoint
from lightning_runs.cli.resume import TrainingLength
from lightning_runs.console import add_quiet_option
from lightning_runs.faults.divergence import GradientCheck
from lightning_runs.faults.signals import CheckpointOnSignal
from lightning_runs.folders.layout import RUNS
from lightning_runs.pictures.callbacks import Figures, Histograms
from lightning_runs.predictions.writer import PredictionWriter
from lightning_runs.records.step_metrics import LossMonitor, SampleRateMonitor
from lightning_runs.records.summary import RunSummary
from lightning_runs.speed.compiling import Compile

TRAINER_DEFAULTS = {
    # Checkpoints written next to their target, fsynced and renamed (a kill never leaves a torn file), in a
    # background thread so that training does not wait for the disk.
    "plugins": [{"class_path": "lightning_runs.checkpoints.BackgroundCheckpointIO"}],
    "logger": {
        "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
        # name null: named for what the run trains (naming.py)
        "init_args": {"save_dir": RUNS, "name": None, "default_hp_metric": False},
    },
}
# Lightning's progress bar redraws after every batch: 7% of this job's fit phase (python -m benchmarks.levers). Every
# 10th batch (and each epoch's last) is still several redraws a second.
PROGRESS_BAR_REFRESH_RATE = 10


def add_run_options(parser: LightningArgumentParser) -> None:
    # The metric it stops on is the project's recipe (--early_stopping.monitor). It stops a run whose metric
    # turns NaN too.
    parser.add_lightning_class_args(EarlyStopping, "early_stopping")
    # Two checkpoints in <run>/checkpoints: `best` by the project's --checkpoint.monitor (ties to the later epoch)
    # and `last` after every epoch. (`save_last` on the best one is rewritten only when the metric improves, so
    # it falls epochs behind.) Both save at the end of the training epoch, after validation and early stopping,
    # so their callback state is current.
    parser.add_lightning_class_args(BestCheckpoint, "checkpoint")
    parser.set_defaults({"checkpoint.filename": "best", "checkpoint.enable_version_counter": False})
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
    parser.add_lightning_class_args(Compile, "compile")  # torch.compile as one switch, off (speed/compiling.py)
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


def adds_default_progress_bar(config, added: Sequence[Callback]) -> bool:
    """Whether the Trainer would add Lightning's default bar: it is on (not --trainer.enable_progress_bar=false or
    --quiet) and none is given, neither by the config (--trainer.callbacks+=TQDMProgressBar
    --trainer.callbacks.refresh_rate=1, or a project's own option) nor among the callbacks `added` to every Trainer."""
    trainer = config.get("trainer") or {}
    listed = trainer.get("callbacks") or []
    given = [*config.values(), *(listed if isinstance(listed, list) else [listed]), *added]
    return trainer.get("enable_progress_bar") is not False and not any(isinstance(c, ProgressBar) for c in given)
