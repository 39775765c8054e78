"""The block `fit` ends with: where the run went, how it ended, what it scored, what it saved, what to run next.

Printed with console.say (rank zero, --quiet too). Its facts are RunSummary's record, the one summary.json holds.
"""

from pathlib import Path

import torch
from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.loggers import MLFlowLogger, TensorBoardLogger

from lightning_runs.console import duration, program, say
from lightning_runs.contract import parts as contract
from lightning_runs.contract.names import counterpart
from lightning_runs.folders.layout import METADATA, is_sharded
from lightning_runs.records.summary import RunSummary


def report_fit(trainer, tested: bool = False) -> None:
    """The closing block of a finished fit (`tested`: and of the test of its best checkpoint, --test_best), said on
    rank zero. A failed fit says its error instead."""
    if trainer.is_global_zero:
        say("\n".join(fit_report(trainer, tested)))


def fit_report(trainer, tested: bool = False) -> list[str]:
    if trainer.fast_dev_run:
        return ["fast_dev_run: one batch of each loop ran; no run folder, checkpoint or summary was written"]
    record = next((c.fit_record for c in trainer.callbacks if isinstance(c, RunSummary)), None) or {}
    run = getattr(trainer.logger, "log_dir", None)  # the logger's: Trainer.log_dir is collective under DDP
    wall, rate = record.get("wall_time_s"), record.get("samples_per_sec")
    lines = [f"Fit {record.get('status', 'ended')}: {_epochs(trainer, record)} in {duration(wall)}"]
    if rate:
        lines[0] += f", {rate:,.0f} samples/s"
    lines.append(f"  run folder   {run}")
    best, last = record.get("best_checkpoint"), record.get("last_checkpoint")
    if best:
        score = "none" if best["score"] is None else f"{best['score']:.4f}"
        lines.append(f"  best {best['monitor']} {score} at epoch {_epoch(run, best['path'])}: {_in(run, best['path'])}")
    if last:
        lines.append(f"  last         epoch {_epoch(run, last)}: {_in(run, last)}")
    test = counterpart(contract.monitored(trainer), "test")
    if tested and test in trainer.callback_metrics:  # the monitored metric's own test score, if the model logs one
        lines.append(f"  {test:12} {float(trainer.callback_metrics[test]):.4f} of the best checkpoint")
    nexts = []
    if (best or last) and not tested:
        nexts.append(f"{program()} test --ckpt_path {_in(run, best['path'] if best else last)}")
    if isinstance(trainer.logger, TensorBoardLogger):
        nexts.append(_tensorboard(trainer.logger))
    elif isinstance(trainer.logger, MLFlowLogger):
        nexts.append(_mlflow(trainer.logger))
    lines += [f"  {'next' if i == 0 else '':12} {command}" for i, command in enumerate(nexts)]
    return lines


def _epochs(trainer, record: dict) -> str:
    epochs = record.get("epochs", trainer.current_epoch)
    stopper = next((c for c in trainer.callbacks if isinstance(c, EarlyStopping) and c.stopped_epoch), None)
    if stopper is not None:
        return f"{epochs} of {trainer.max_epochs} epochs, stopped early on {stopper.monitor}"
    return f"{epochs} of {trainer.max_epochs} epochs" if trainer.max_epochs else f"{epochs} epochs"


def _in(run: str | None, path: str) -> Path:
    """summary.json's paths are relative to the run folder (absolute when outside it); this one is from here."""
    return Path(path) if run is None else Path(run) / path


def _epoch(run: str | None, path: str) -> int | str:
    """The epoch a checkpoint was saved in, counted from 1 (Lightning's `epoch` is its index)."""
    try:
        checkpoint = _in(run, path)
        if is_sharded(checkpoint):  # a sharded fit's folder: its epoch is in the part that is not sharded
            checkpoint = checkpoint / METADATA
        return torch.load(checkpoint, map_location="cpu", weights_only=True, mmap=True)["epoch"] + 1
    except (OSError, RuntimeError, KeyError):  # moved or unreadable since: the block still prints
        return "?"


def _tensorboard(logger: TensorBoardLogger) -> str:
    return f"tensorboard --logdir {logger.save_dir}"  # a command any user has, not a Makefile's target


def _mlflow(logger: MLFlowLogger) -> str:
    uri = logger.experiment.tracking_uri  # the client's: the run is open by the end of a fit
    return f"mlflow ui --backend-store-uri {uri}" if uri.startswith("sqlite:") else f"open {uri}"
