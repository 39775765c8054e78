"""The entries of summary.json, read from a trainer: the data a run used as a config names it, its checkpoints
(relative to the run folder, so that it can be moved whole), its metrics as JSON numbers, and the HPARAMS tags its
scores are logged under."""

import json
import math
from datetime import datetime, timezone
from pathlib import Path

from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_runs.folders.layout import run_folder

# A data argument that changes no split: Lightning's own name for it (BatchSizeFinder's `batch_arg_name`).
BATCH_SIZE = "batch_size"


def best_tag(monitor: str | None) -> str | None:
    """The HPARAMS metric of the best score of `monitor`: `val/f1` -> `hp/best_val_f1`."""
    return None if not monitor else f"hp/best_{monitor.replace('/', '_')}"


def hparams_tag(metric: str | None) -> str | None:
    """The HPARAMS metric of `metric`: `test/f1` -> `hp/test_f1`."""
    return None if not metric else f"hp/{metric.replace('/', '_')}"


def data_entry(datamodule) -> dict | None:
    """What an evaluation ran on, as a config names it: the DataModule's class path and its hyperparameters."""
    if datamodule is None:
        return None
    cls = type(datamodule)
    given = {key: value for key, value in datamodule.hparams.items() if not key.startswith("_")}  # not _class_path
    init_args = json.loads(json.dumps(given, default=str))  # as summary.json will hold them
    return {"class_path": f"{cls.__module__}.{cls.__qualname__}", "init_args": init_args}


def same_data(fitted: dict | None, evaluated: dict | None) -> bool:
    """The same class path, and equal values for the arguments both give, the batch size aside; unknown on either
    side: the same."""
    if not isinstance(fitted, dict) or evaluated is None:
        return True
    if fitted.get("class_path") != evaluated["class_path"]:
        return False
    given, used = fitted.get("init_args") or {}, evaluated["init_args"]
    shared = (given.keys() & used.keys()) - {BATCH_SIZE}
    return all(json.loads(json.dumps(given[key], default=str)) == used[key] for key in shared)


def checkpoint_entries(trainer) -> dict:
    saved = [c for c in trainer.checkpoint_callbacks if isinstance(c, ModelCheckpoint) and c.best_model_path]
    best = next((c for c in saved if c.monitor), None)
    last = next((c for c in saved if not c.monitor), None)
    summary = {"best_checkpoint": None, "last_checkpoint": None}
    if best is not None:
        summary["best_checkpoint"] = {"path": relative_path(best.best_model_path, trainer), "monitor": best.monitor}
        summary["best_checkpoint"] |= {"mode": best.mode, "score": number(best.best_model_score)}
    if last is not None:  # without a monitor, ModelCheckpoint's "best" is simply the newest
        summary["last_checkpoint"] = relative_path(last.best_model_path, trainer)
    return summary


def relative_path(path, trainer) -> str | None:
    """Relative to the run directory when inside it, so that the folder can be moved or copied whole."""
    if not path:
        return None
    folder = run_folder(trainer)
    resolved = Path(path).resolve()
    if folder is not None and resolved.is_relative_to(folder.resolve()):
        return str(resolved.relative_to(folder.resolve()))
    return str(resolved)


def metric_entries(metrics: dict) -> dict:
    return {name: number(value) for name, value in sorted(metrics.items())}


def number(value) -> float | str | None:
    value = float(value) if value is not None else None
    return value if value is None or math.isfinite(value) else str(value)  # JSON has no NaN or infinity


def iso_time(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")
