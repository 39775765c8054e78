"""The parts every run has, each an option group named as its class (`--best_checkpoint.monitor`, `--gradient_check`),
each a Lightning part of its own that any `Trainer(callbacks=[...])` takes, each switched off with `null` (`--figures
null`, or `figures: null` in a config) or swapped for another class by class path. Plus `--name`, `--quiet` and
`--test_best`, and the library's trainer defaults."""

from jsonargparse import ActionYesNo
from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor
from lightning.pytorch.cli import LightningArgumentParser

from lightning_runs.checkpoints import BestCheckpoint, LastCheckpoint, RandomState
from lightning_runs.configs import option
from lightning_runs.faults import CheckpointOnSignal, GradientCheck, LoaderCheck, MonitorCheck
from lightning_runs.pictures import Figures, Histograms
from lightning_runs.predictions import PredictionWriter
from lightning_runs.records import RunSummary
from lightning_runs.run_folders import RUNS
from lightning_runs.speed import Compile

TRAINER_DEFAULTS = {
    # Checkpoints written beside their target, fsynced and renamed, in a background thread (checkpoints/).
    "plugins": [{"class_path": "lightning_runs.checkpoints.BackgroundCheckpointIO"}],
    # name null: the run's name, given by --name (placement.py)
    "logger": {
        "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
        "init_args": {"save_dir": RUNS, "name": None, "default_hp_metric": False},
    },
}
# Each part with the arguments its recipe here differs in from the class's own defaults; None: off unless a config
# turns it on (early stopping watches a metric only the project knows).
PARTS = {
    # Any order works (MonitorCheck puts itself first, LastCheckpoint after the other ModelCheckpoints, at setup); this
    # one reads as the run goes: the loaders and the watched metrics checked, then what is saved.
    LoaderCheck: {},
    MonitorCheck: {},
    # `best` by --best_checkpoint.monitor (ties to the later epoch), then `last` after every epoch, holding best's
    # state as it is after this epoch. Both at an epoch's end, after validation and early stopping, so their callback
    # state is current.
    BestCheckpoint: {"filename": "best", "enable_version_counter": False},
    LastCheckpoint: {"filename": "last", "enable_version_counter": False},
    EarlyStopping: None,
    LearningRateMonitor: {"logging_interval": "step"},
    RandomState: {},
    GradientCheck: {},
    CheckpointOnSignal: {},
    Compile: {},
    Figures: {},
    Histograms: {},
    RunSummary: {},
    PredictionWriter: {},
}


def add_parts(parser: LightningArgumentParser) -> None:
    for cls, arguments in PARTS.items():
        parser.add_lightning_class_args(cls, option(cls.__name__), subclass_mode=True, required=False)
        parser.set_defaults({option(cls.__name__): None if arguments is None else _default(cls, arguments)})
    parser.add_argument("--name", type=str | None, default=None, help="The run's name: runs/<name>/version_N.")
    parser.add_argument("--quiet", action=ActionYesNo, default=False, help="Only warnings, errors, results: CI logs.")
    parser.add_argument(
        "--init_from",
        type=str | None,
        default=None,
        help="fit: a new run from this checkpoint's (or run folder's) weights.",
    )
    parser.add_argument("--freeze", type=list[str], default=[], help="fit: parts (submodule names) left untrained.")
    parser.add_argument("--test_best", type=bool, default=False, help="fit: then test the best checkpoint, here.")


def set_part_defaults(parser: LightningArgumentParser, key: str, **arguments) -> None:
    """A project's recipe for one part, over the library's: `set_part_defaults(parser, "best_checkpoint",
    monitor="val_loss", mode="min")`; a part that is off by default (early_stopping) is turned on."""
    cls = next(cls for cls in PARTS if option(cls.__name__) == key)
    current = parser.get_default(key)  # not get_defaults(): it validates every default, 25 ms
    given = dict(current.init_args) if current is not None and current.get("init_args") else PARTS[cls] or {}
    parser.set_defaults({key: _default(cls, {**given, **arguments})})


def _default(cls: type, arguments: dict) -> dict:
    # The public name of a library class is its subpackage's (lightning_runs.checkpoints.BestCheckpoint).
    module = cls.__module__.rpartition(".")[0] if cls.__module__.startswith("lightning_runs") else cls.__module__
    return {"class_path": f"{module}.{cls.__name__}", "init_args": arguments}
