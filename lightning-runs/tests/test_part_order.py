"""The parts in a plain Trainer in any order: each listed the other way round from the CLI's (cli/parts.py) does what it
does in the CLI's order. Lightning keeps a list's order, but for its ModelCheckpoints, which it moves to the end."""

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.demos.boring_classes import BoringModel
from torch.utils.data import DataLoader, TensorDataset

from lightning_runs.checkpoints import BestCheckpoint, LastCheckpoint
from lightning_runs.errors import UsageError
from lightning_runs.faults import LoaderCheck, MonitorCheck
from tiny_tasks import TinyBatches, TinyClassifier

QUIET = {"accelerator": "cpu", "logger": False, "enable_progress_bar": False, "enable_model_summary": False}


def test_monitor_check_listed_after_early_stopping_still_says_its_line_first(tmp_path):
    # Validated inside the epoch, early stopping reads its metric at validation's end (not at the epoch's end, where
    # Lightning calls the monitoring callbacks last): the hook MonitorCheck shares with it.
    trainer = L.Trainer(
        max_epochs=1, limit_train_batches=4, val_check_interval=2, num_sanity_val_steps=0,
        callbacks=[EarlyStopping(monitor="val_loss"), MonitorCheck()], default_root_dir=tmp_path, **QUIET,
    )  # fmt: skip
    with pytest.raises(UsageError, match=r"^EarlyStopping monitors val_loss, which TinyClassifier does not log"):
        trainer.fit(TinyClassifier(), datamodule=TinyBatches())


def test_monitor_check_listed_before_loader_check_leaves_an_empty_validation_split_to_it(tmp_path):
    empty = DataLoader(TensorDataset(torch.zeros(0, 32)), batch_size=2)
    trainer = L.Trainer(
        max_epochs=1, callbacks=[MonitorCheck(), LoaderCheck(), EarlyStopping(monitor="val_loss")],
        default_root_dir=tmp_path, **QUIET,
    )  # fmt: skip
    with pytest.raises(UsageError, match=r"^fit: BoringModel\.val_dataloader gives no batch"):
        trainer.fit(BoringModel(), val_dataloaders=empty)


def test_last_checkpoint_listed_before_best_checkpoint_holds_best_as_it_is_after_the_epoch(tmp_path):
    trainer = L.Trainer(
        max_epochs=3, limit_train_batches=4,
        callbacks=[LastCheckpoint(dirpath=tmp_path, filename="last"),
                   BestCheckpoint(dirpath=tmp_path, monitor="val/loss", filename="best")],
        **QUIET,
    )  # fmt: skip
    trainer.fit(TinyClassifier(), datamodule=TinyBatches())
    best = next(c for c in trainer.checkpoint_callbacks if isinstance(c, BestCheckpoint))
    saved = torch.load(tmp_path / "last.ckpt", weights_only=True)["callbacks"][best.state_key]
    assert saved["best_model_score"] == best.best_model_score, "a resume from last.ckpt would carry a stale best"
    assert saved["best_model_path"] == best.best_model_path
