"""Every part stands alone: a plain Lightning script, no RunsCLI, takes the library's callbacks and checkpoint plugin
and gets what a RunsCLI run gets from them: exact resume after SIGTERM, whole checkpoints, the run's summary.json."""

import json
import os
from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import TensorBoardLogger
from tiny_runs import assert_same_checkpoint, load

from lightning_runs.checkpoints import AtomicCheckpointIO, BestCheckpoint, LastCheckpoint, RandomState
from lightning_runs.errors import Stopped
from lightning_runs.faults import CheckpointOnSignal, GradientCheck, MonitorCheck
from lightning_runs.records import RunSummary
from lightning_runs.testing import SignalAt
from tiny_tasks import TinyBatches, TinyClassifier


def plain_fit(folder: Path, ckpt_path: str | None = None, stop: int | None = None) -> L.Trainer:
    """A script a user would write, with the library's parts in it, run in `folder`."""
    folder.mkdir(exist_ok=True)
    os.chdir(folder)
    L.seed_everything(0)
    parts = [
        MonitorCheck(),
        BestCheckpoint(monitor="val/loss", filename="best"),
        LastCheckpoint(filename="last"),
        RandomState(),
        CheckpointOnSignal(),
        GradientCheck(),
        RunSummary(),
    ]
    trainer = L.Trainer(
        max_epochs=3,
        limit_train_batches=4,
        accelerator="cpu",
        logger=TensorBoardLogger("runs", name="plain", version=0),
        callbacks=[*parts, *([SignalAt(stop)] if stop is not None else [])],
        plugins=[AtomicCheckpointIO()],
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(TinyClassifier(), datamodule=TinyBatches(), ckpt_path=ckpt_path)
    return trainer


def test_a_plain_script_with_the_librarys_parts_resumes_exactly_after_sigterm_and_writes_its_summary(tmp_path):
    run = Path("runs/plain/version_0")
    plain_fit(tmp_path / "whole")
    stopped = tmp_path / "stopped"
    with pytest.raises(Stopped, match="stopped by SIGTERM at step 6"):  # inside the second epoch
        plain_fit(stopped, stop=5)
    assert json.loads((stopped / run / "summary.json").read_text())["status"] == "interrupted"
    resumed = plain_fit(stopped, ckpt_path=str(stopped / run / "checkpoints/last.ckpt"))
    assert resumed.global_step == 12
    assert_same_checkpoint(
        load(tmp_path / "whole" / run / "checkpoints/last.ckpt"),
        load(resumed.checkpoint_callback.dirpath + "/last.ckpt"),
    )
    summary = json.loads((stopped / run / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["global_step"] == 12 and summary["config"] is None
    assert summary["best_checkpoint"]["monitor"] == "val/loss" and summary["resumed_from"] == "checkpoints/last.ckpt"
    assert not [p for p in (stopped / run / "checkpoints").iterdir() if p.name.startswith(".")], "no temp file"


def test_monitor_check_stands_alone_and_says_what_the_module_logs(tmp_path):
    trainer = L.Trainer(
        max_epochs=1, limit_train_batches=2, accelerator="cpu", logger=False, enable_progress_bar=False,
        callbacks=[MonitorCheck(), ModelCheckpoint(dirpath=tmp_path, monitor="val_loss")],
    )  # fmt: skip
    with pytest.raises(Exception, match=r"ModelCheckpoint monitors val_loss, which TinyClassifier does not log \(it"
                       r" logs: val/acc, val/loss\)"):  # fmt: skip
        trainer.fit(TinyClassifier(), datamodule=TinyBatches())
    assert trainer.global_step == 0, "said after the sanity check, before any training"
    assert not list(tmp_path.iterdir())
    assert torch.is_grad_enabled()
