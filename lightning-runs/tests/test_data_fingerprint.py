"""lightning_runs.data.fingerprint in a plain Lightning script: a DataModule that carries the fingerprint of what it
read in its checkpoint state refuses a fit resumed on other data in one line; the same data resumes, and an evaluation
may read other data."""

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

from lightning_runs.data.fingerprint import check_same_data, fingerprint
from lightning_runs.errors import UsageError
from tiny_tasks import TinyClassifier


class PointsFile(L.LightningDataModule):
    """Labelled points from a .npy file of (N, 5) rows, the label last: a user's data, read at setup."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path, self.read = path, None

    def setup(self, stage: str) -> None:
        rows = torch.from_numpy(np.load(self.path)).float()
        self.points, self.labels = rows[:, :4], rows[:, 4].long()
        self.read = fingerprint(len(rows), self.points, self.labels)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(TensorDataset(self.points, self.labels), batch_size=8)

    test_dataloader = val_dataloader = train_dataloader

    def state_dict(self) -> dict:
        return {"data": self.read}

    def load_state_dict(self, state: dict) -> None:
        check_same_data(self, state.get("data"), lambda: self.read, self.path)


def write_points(path, seed: int, n: int = 32) -> None:
    generator = np.random.default_rng(seed)
    np.save(path, np.concatenate([generator.normal(size=(n, 4)), generator.integers(0, 3, (n, 1))], axis=1))


def trainer(tmp_path, epochs: int) -> L.Trainer:
    saves = ModelCheckpoint(tmp_path / "checkpoints", save_last=True)
    options = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False}
    return L.Trainer(default_root_dir=tmp_path, max_epochs=epochs, callbacks=[saves], **options)


def test_a_fit_resumed_on_other_data_is_refused_in_one_line_naming_both_reads(tmp_path):
    path, last = str(tmp_path / "points.npy"), str(tmp_path / "checkpoints" / "last.ckpt")
    write_points(path, seed=0)
    trainer(tmp_path, 1).fit(TinyClassifier(), datamodule=PointsFile(path))
    saved = torch.load(last, weights_only=True)["PointsFile"]["data"]
    assert saved.startswith("32 samples #")
    write_points(path, seed=1)  # rewritten at the same path: as many points, other values
    with pytest.raises(UsageError) as refused:
        trainer(tmp_path, 2).fit(TinyClassifier(), datamodule=PointsFile(path), ckpt_path=last)
    assert str(refused.value).startswith(f"{path}: not the data the checkpoint's run read ({saved} then, 32 samples #")
    assert str(refused.value).endswith("start a new run (trainer.fit(..., ckpt_path=None))")
    assert "\n" not in str(refused.value)
    trainer(tmp_path, 2).test(TinyClassifier(), datamodule=PointsFile(path), ckpt_path=last, verbose=False)
    write_points(path, seed=0)  # put back: the fit resumes
    resumed = trainer(tmp_path, 2)
    resumed.fit(TinyClassifier(), datamodule=PointsFile(path), ckpt_path=last)
    assert resumed.global_step == 8


def test_a_fingerprint_is_of_the_values_and_the_count():
    points = torch.arange(12.0).view(3, 4)
    assert fingerprint(3, points) == fingerprint(3, points.clone())
    assert fingerprint(3, points) != fingerprint(3, points + 1)
    assert fingerprint(3, points).startswith("3 samples #")
    assert fingerprint(2, [("a", 1), ("b", 2)], unit="files").startswith("2 files #")
    assert fingerprint(3, points.bfloat16()) != fingerprint(3, points.half())  # any dtype, by its bytes
