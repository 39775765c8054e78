"""The files of a run folder, in one registry: each with the option that names it, or the part of the stack that
fixes its name. Options could make one file of a run replace another, exit 0: `--summary.filename
checkpoints/last.ckpt` turned last.ckpt into JSON (the run could no longer resume), `--last_checkpoint.filename best`
left one file for both checkpoints, `--summary.filename config.yaml` replaced the saved config. Every name is checked
against every other before anything runs.

runs/<name>/version_N/
  config.yaml, config.<subcommand>[-N].yaml   the saved config (LightningCLI's SaveConfigCallback; placement.py)
  hparams.yaml, metrics.csv, events.out.*     the logger's (TensorBoard's, CSV's)
  summary.json                                --summary.filename
  predictions.csv (.npy, .npz beside it)      --prediction_writer.filename
  checkpoints/best.ckpt, checkpoints/last.ckpt  --checkpoint.filename, --last_checkpoint.filename (and save_last)
"""

import inspect
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath

from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import SaveConfigCallback
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter

from lightning_runs.errors import UsageError

# Where Lightning's ModelCheckpoint writes without a dirpath (preflight.py refuses one): <run>/checkpoints.
CHECKPOINTS = "checkpoints"
# The options that name a file inside the run folder (naming.py refuses one that leads out of it).
FILE_OPTIONS = ("checkpoint.filename", "last_checkpoint.filename", "prediction_writer.filename", "summary.filename")
CHECKPOINT_GROUPS = ("checkpoint", "last_checkpoint")
PREDICTION_ARRAYS = (".npy", ".npz")  # written beside the predictions' CSV, with its stem (predictions/writer.py)
_CONFIG = inspect.signature(SaveConfigCallback).parameters["config_filename"].default  # config.yaml
# Names no option chooses: patterns, relative to the run folder, and what writes them.
FIXED = {
    _CONFIG: "the run's saved config",
    f"{PurePosixPath(_CONFIG).stem}.*{PurePosixPath(_CONFIG).suffix}": "the config a resume or an evaluation saves",
    TensorBoardLogger.NAME_HPARAMS_FILE: "the logger's hyperparameters",
    ExperimentWriter.NAME_METRICS_FILE: "the CSV logger's metrics",
    "events.out.tfevents.*": "TensorBoard's events",
}
# The files above that a logger writes in place (not atomically): a full disk can leave one empty.
LOGGER_FILES = (TensorBoardLogger.NAME_HPARAMS_FILE, ExperimentWriter.NAME_METRICS_FILE, "events.out.tfevents.*")


def remove_emptied_logger_files(folder: Path) -> list[Path]:
    """A logger's file that a full disk left at 0 bytes holds nothing: removed, so that no empty file passes for a
    record (an empty hparams.yaml reads as no hyperparameters)."""
    emptied = [
        path
        for path in folder.iterdir()
        if any(fnmatch(path.name, name) for name in LOGGER_FILES) and path.is_file() and path.stat().st_size == 0
    ]
    for path in emptied:
        path.unlink()
    return emptied


@dataclass(frozen=True)
class RunFile:
    """One file a run writes: `path` relative to the run folder, `option` and `value` the setting that named it."""

    path: PurePosixPath
    option: str
    value: object

    def said(self) -> str:
        return f"--{self.option} {self.value}"


def run_files(config) -> list[RunFile]:
    """The files the configured callbacks write into the run folder, each named as the callback will name it."""
    files = []
    for group in CHECKPOINT_GROUPS:
        settings = config.get(group)
        if settings is None:
            continue
        if settings.get("filename") is not None:  # None: Lightning's "{epoch}-{step}" template, never a fixed name
            name = f"{settings.filename}{ModelCheckpoint.FILE_EXTENSION}"
            files.append(RunFile(PurePosixPath(CHECKPOINTS, name), f"{group}.filename", settings.filename))
        if settings.get("save_last"):  # Lightning's own last.ckpt beside it
            name = f"{ModelCheckpoint.CHECKPOINT_NAME_LAST}{ModelCheckpoint.FILE_EXTENSION}"
            files.append(RunFile(PurePosixPath(CHECKPOINTS, name), f"{group}.save_last", settings.save_last))
    if (summary := config.get("summary.filename")) is not None:
        files.append(RunFile(PurePosixPath(summary), "summary.filename", summary))
    if (predictions := config.get("prediction_writer.filename")) is not None:
        path = PurePosixPath(predictions)
        option = "prediction_writer.filename"
        files += [RunFile(path, option, predictions)]
        files += [RunFile(path.with_suffix(suffix), option, predictions) for suffix in PREDICTION_ARRAYS]
    return files


def check_run_files(config) -> None:
    """No two options name one file of the run (or a file where another needs a folder), and none names a file whose
    name is fixed; refused in one line naming both, before any folder is claimed."""
    files = run_files(config)
    for index, one in enumerate(files):
        for other in files[index + 1 :]:
            if one.option != other.option and _collide(one.path, other.path):
                raise UsageError(
                    f"{one.said()} and {other.said()} both name {_shown(one.path, other.path)} in the run folder, and"
                    f" one would replace the other; give one of them another name"
                )
        for pattern, what in FIXED.items():
            if fnmatch(str(one.path), pattern):
                raise UsageError(f"{one.said()}: {one.path} is {what} in the run folder; give another name")


def _collide(a: PurePosixPath, b: PurePosixPath) -> bool:
    """The same file, or one of them where the other needs a folder (`checkpoints/best.ckpt/x`)."""
    return a == b or a in b.parents or b in a.parents


def _shown(a: PurePosixPath, b: PurePosixPath) -> PurePosixPath:
    return min(a, b, key=lambda path: len(path.parts))
