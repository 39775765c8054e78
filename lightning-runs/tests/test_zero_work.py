"""Zero work is an error: a command that would run no batch is one line, exit 2, and leaves no run folder, where
Lightning warns, skips the stage and the run "completed" having done nothing. Settings are refused as the command is
parsed; a loader of no batches once Lightning has counted them (LoaderCheck), the folder the command made removed."""

import shutil
from pathlib import Path

import pytest
import torch
from lightning import Trainer
from lightning.pytorch.demos.boring_classes import BoringModel
from tiny_runs import load, refusal, run
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

from lightning_runs.errors import UsageError
from lightning_runs.faults import LoaderCheck
from tiny_tasks import TinyDataModule

SETTINGS = [
    ("fit", ["--trainer.limit_train_batches=0"], "--trainer.limit_train_batches 0: fit would run no batch"),
    ("fit", ["--trainer.limit_train_batches=0.0"], "--trainer.limit_train_batches 0: fit would run no batch"),
    ("fit", ["--trainer.max_epochs=0"], "--trainer.max_epochs 0: fit would run no batch"),
    ("fit", ["--trainer.max_steps=0"], "--trainer.max_steps 0: fit would run no batch"),
    ("fit", ["--test_best=true", "--trainer.limit_test_batches=0"], "its --test_best would run no batch"),
    ("validate", ["--trainer.limit_val_batches=0"], "--trainer.limit_val_batches 0: validate would run no batch"),
    ("test", ["--trainer.limit_test_batches=0"], "--trainer.limit_test_batches 0: test would run no batch"),
    ("predict", ["--trainer.limit_predict_batches=0"], "--trainer.limit_predict_batches 0: predict would run no"),
]


@pytest.mark.parametrize(("subcommand", "args", "line"), SETTINGS, ids=[" ".join(c[1]) for c in SETTINGS])
def test_settings_that_run_no_batch_are_refused_before_any_run_folder(subcommand, args, line, capsys):
    assert line in refusal(capsys, lambda: run(subcommand, *args))
    assert not Path("runs").exists()


def test_limits_lightning_replaces_are_not_refused(capsys):
    # overfit_batches sets the training limit itself; fast_dev_run every limit and the epochs.
    run("fit", "--trainer.overfit_batches=1", "--trainer.limit_train_batches=0", "--trainer.max_epochs=1")
    run("fit", "--trainer.fast_dev_run=1", "--trainer.max_epochs=0")
    assert Path("runs/tiny/version_0/checkpoints/last.ckpt").is_file()


def test_a_fraction_of_less_than_one_batch_is_refused_and_leaves_no_folder(capsys):
    line = refusal(capsys, lambda: run("fit", "--trainer.limit_train_batches=0.0001"))
    assert "limit_train_batches" in line  # Lightning's own line, exit 2 (MisconfigurationException)
    assert not Path("runs").exists()


EMPTY = {
    "an empty validation split": (["--data.n=7"], "fit: TinyDataModule.val_dataloader gives no batch"),
    "fewer samples than a batch with drop_last": (
        ["--data=tiny_tasks.TinyBatches", "--data.n=16"],
        "fit: TinyBatches.train_dataloader gives no batch",
    ),
    "an empty shuffled training split": (
        ["--data.n=0", "--trainer.limit_val_batches=0", "--early_stopping=null", "--best_checkpoint.monitor=null"],
        "a shuffled DataLoader over no samples",
    ),
}


@pytest.mark.parametrize("case", EMPTY)
def test_a_fit_of_an_empty_split_is_refused_and_its_run_folder_removed(case, capsys):
    args, line = EMPTY[case]
    assert line in refusal(capsys, lambda: run("fit", "--trainer.max_epochs=1", *args))
    assert not Path("runs").exists()


def test_an_evaluation_of_an_empty_split_adds_no_file_to_its_run_and_changes_no_checkpoint(finished, capsys):
    shutil.copytree(finished, "runs")  # a short fit (conftest's)
    run_dir = Path("runs/tiny/version_0")
    files, last = set(run_dir.rglob("*")), load(run_dir / "checkpoints/last.ckpt")["state_dict"]
    line = refusal(capsys, lambda: run("validate", "--ckpt_path=last", "--data.n=7"))
    assert "validate: TinyDataModule.val_dataloader gives no batch" in line
    assert set(run_dir.rglob("*")) == files  # no config.validate.yaml, no events file of it
    assert torch.equal(load(run_dir / "checkpoints/last.ckpt")["state_dict"]["layer.weight"], last["layer.weight"])


def test_loader_check_refuses_every_stage_of_a_plain_trainer():
    empty = DataLoader(TensorDataset(torch.zeros(0, 32)), batch_size=2)
    quiet = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False}
    trainer = Trainer(callbacks=[LoaderCheck()], **quiet)
    for stage in ("validate", "test", "predict"):
        with pytest.raises(UsageError, match=rf"{stage}: BoringModel\.\w+_dataloader gives no batch"):
            getattr(trainer, stage)(BoringModel(), empty)
    with pytest.raises(UsageError, match=r"fit: BoringModel\.val_dataloader gives no batch"):
        trainer.fit(BoringModel(), val_dataloaders=empty)
    trainer = Trainer(callbacks=[LoaderCheck()], limit_val_batches=0, **quiet)
    with pytest.raises(UsageError, match=r"fit: BoringModel\.train_dataloader gives no batch"):
        trainer.fit(BoringModel(), train_dataloaders=empty)


class Nothing(IterableDataset):
    """A stream without a length that yields nothing: Lightning counts its batches as endless."""

    def __iter__(self):
        return iter(())


class EmptyStream(TinyDataModule):
    def train_dataloader(self) -> DataLoader:
        return DataLoader(Nothing(), batch_size=self.hparams.batch_size)


def test_a_fit_on_a_stream_that_yields_nothing_is_refused_and_its_run_folder_removed(capsys):
    line = refusal(capsys, lambda: run("fit", "--trainer.max_epochs=3", f"--data={__name__}.EmptyStream"))
    assert "fit: EmptyStream.train_dataloader gives no batch" in line, line
    assert not Path("runs").exists()


def test_loader_check_refuses_a_stream_that_yields_nothing_in_every_stage_of_a_plain_trainer():
    quiet = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False, "max_epochs": 3}
    for stage in ("validate", "test", "predict"):
        with pytest.raises(UsageError, match=rf"{stage}: BoringModel\.\w+_dataloader gives no batch"):
            getattr(Trainer(callbacks=[LoaderCheck()], **quiet), stage)(BoringModel(), DataLoader(Nothing()))
    trainer = Trainer(callbacks=[LoaderCheck()], limit_val_batches=0, **quiet)
    with pytest.raises(UsageError, match=r"fit: BoringModel\.train_dataloader gives no batch"):
        trainer.fit(BoringModel(), train_dataloaders=DataLoader(Nothing()))
    assert trainer.current_epoch == 0  # at the end of the first epoch, not after max_epochs of none
