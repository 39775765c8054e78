"""Each evaluation gets the figures of its task, read from what the model returns and the batch holds: a classifier its
confusion matrix, a regression its predicted-against-true and residual plots, anything else none and no error; a
module whose validation_step returns nothing is called on the inputs, in the epochs whose figures are drawn only."""

import json
import os
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch.loggers import TensorBoardLogger
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from test_figures_by_shape import Kept, stand_in_trainer
from tiny_regression import TinyRegressionDataModule, TinyRegressor
from torch import nn
from torch.utils.data import DataLoader

from lightning_runs.pictures import callbacks as figures
from lightning_runs.pictures.callbacks import Figures
from lightning_runs.pictures.regression import MAX_POINTS
from tiny_tasks import TinyClassifier, TinyDataModule

BATCHES = 6  # training batches an epoch of the tiny tasks: 192 points, 32 a batch


def fit_and_test(module, data, epochs: int = 1, every: int = 1) -> EventAccumulator:
    """A fit then a test with the Figures callback and a TensorBoard logger; the events they wrote."""
    trainer = L.Trainer(
        max_epochs=epochs,
        logger=TensorBoardLogger(Path.cwd(), name="", version=""),
        callbacks=[Figures(every_n_epochs=every)],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(module, datamodule=data)
    trainer.test(module, datamodule=data, verbose=False)
    events = EventAccumulator(str(Path.cwd()), size_guidance={"images": 0})
    events.Reload()
    return events


def said(capsys) -> list[str]:
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("figures:")]


def test_a_classifier_still_gets_its_confusion_matrices(capsys):
    events = fit_and_test(TinyClassifier(), TinyDataModule())
    assert set(events.Tags()["images"]) == {"val/confusion_matrix", "test/confusion_matrix"}  # tables: no samples
    assert said(capsys) == []


def test_a_regression_gets_predicted_against_true_and_residuals_every_n_epochs_and_at_the_end(capsys):
    events = fit_and_test(TinyRegressor(), TinyRegressionDataModule(), epochs=3, every=2)
    plots = {f"{stage}/{name}" for stage in ("val", "test") for name in ("predicted_vs_true", "residuals")}
    assert set(events.Tags()["images"]) == plots
    for name in ("predicted_vs_true", "residuals"):
        assert [image.step for image in events.Images(f"val/{name}")] == [2 * BATCHES, 3 * BATCHES]  # epoch 2, end
        (image,) = events.Images(f"test/{name}")
        assert image.width > 200 and image.height > 200 and len(image.encoded_image_string) > 5_000
    assert said(capsys) == []


def test_a_regression_draws_at_most_max_points_and_its_errors_count_every_sample(monkeypatch):
    writer = Kept()
    monkeypatch.setattr(figures, "picture_writers", lambda trainer: [writer])
    trainer = stand_in_trainer(None, global_step=5)
    callback = Figures(every_n_epochs=1)
    callback.setup(trainer, None, "validate")
    true = torch.arange(3 * MAX_POINTS, dtype=torch.float32)
    for batch in true.split(1000):  # every prediction 2 too high: RMSE and MAE 2
        callback.on_validation_batch_end(trainer, None, batch[:, None] + 2, (batch[:, None], batch), 0)
    callback.on_validation_epoch_end(trainer, None)
    scatter = writer.pictures["val/predicted_vs_true"].axes[0]
    (points,) = scatter.collections
    assert len(points.get_offsets()) == MAX_POINTS
    assert scatter.get_title() == f"val: {3 * MAX_POINTS} samples (step 5, {MAX_POINTS} drawn)\nRMSE 2, MAE 2"
    residuals = writer.pictures["val/residuals"].axes[0]
    assert residuals.collections[0].get_offsets()[:, 1].tolist() == [-2.0] * MAX_POINTS  # true - predicted


class Autoencoder(L.LightningModule):
    """Batches of inputs alone, (N, 1, 4, 4); validation returns the reconstruction, or nothing."""

    def __init__(self, returns: bool) -> None:
        super().__init__()
        self.returns = returns
        self.net = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.Conv2d(2, 1, 3, padding=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        return F.mse_loss(self(batch), batch)

    def validation_step(self, batch, batch_idx):
        reconstruction = self(batch)
        self.log("val/loss", F.mse_loss(reconstruction, batch))
        return reconstruction if self.returns else None

    test_step = validation_step

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class Images(L.LightningDataModule):
    def __init__(self) -> None:
        super().__init__()
        self.images = torch.randn(64, 1, 4, 4, generator=torch.Generator().manual_seed(0))

    def train_dataloader(self):
        return DataLoader(self.images, batch_size=16)  # a batch is one (16, 1, 4, 4) tensor, no targets

    val_dataloader = test_dataloader = train_dataloader


@pytest.mark.parametrize("returns", [True, False], ids=["returns_reconstruction", "returns_nothing"])
def test_an_autoencoder_without_targets_gets_no_figures_and_no_error(capsys, returns):
    module = Autoencoder(returns)
    events = fit_and_test(module, Images(), epochs=2)
    assert events.Tags()["images"] == []
    assert len(said(capsys)) == 1, "one line a run, not one a batch or a stage"


class Quiet(TinyRegressor):
    """A module written as Lightning's docs write them: validation_step logs its loss and returns nothing. It counts,
    per epoch, the calls of forward made during validation (its own steps use the layer directly)."""

    def __init__(self) -> None:
        super().__init__()
        self.validation_calls: dict[int, int] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._trainer is not None and self.trainer.validating:
            epoch = self.trainer.current_epoch
            self.validation_calls[epoch] = self.validation_calls.get(epoch, 0) + 1
        return super().forward(x)

    def validation_step(self, batch, batch_idx: int) -> None:
        self.log("val/loss", F.mse_loss(self.layer(batch[0]).squeeze(-1), batch[1]))

    def test_step(self, batch, batch_idx: int) -> torch.Tensor:
        return F.mse_loss(self.layer(batch[0]).squeeze(-1), batch[1])  # only its loss


def test_a_module_returning_nothing_is_called_on_the_inputs_only_in_the_epochs_whose_figures_are_drawn(capsys):
    module = Quiet()
    events = fit_and_test(module, TinyRegressionDataModule(), epochs=5, every=2)
    val_batches = 1  # 32 validation points, 32 a batch (the test's own call is not during validation)
    assert module.validation_calls == {1: val_batches, 3: val_batches, 4: val_batches}, "epochs 2, 4 and the last"
    for name in ("predicted_vs_true", "residuals"):
        assert [image.step for image in events.Images(f"val/{name}")] == [2 * BATCHES, 4 * BATCHES, 5 * BATCHES]
        assert len(events.Images(f"test/{name}")) == 1
    assert said(capsys) == []


class NoForward(TinyClassifier):
    """Returns nothing from validation and has no forward of its own: calling it raises NotImplementedError."""

    forward = L.LightningModule.forward

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        return F.cross_entropy(self.layer(batch[0]), batch[1])

    def validation_step(self, batch, batch_idx: int) -> None:
        self.log("val/loss", F.cross_entropy(self.layer(batch[0]), batch[1]))

    test_step = validation_step


def test_a_module_that_cannot_be_called_gets_no_figures_and_one_line(capsys):
    events = fit_and_test(NoForward(), TinyDataModule(), epochs=2)
    assert events.Tags()["images"] == []
    (line,) = said(capsys)
    assert line.startswith("figures: none for val: calling the module on a batch's inputs raised NotImplementedError")


# Two ranks, each half of the 32 validation points: rank zero's figures show all 32.
DDP_SCRIPT = """
import json
import sys

import lightning as L

from lightning_runs.pictures import callbacks as figures
from tiny_regression import TinyRegressionDataModule, TinyRegressor

drawn = []


class Writer:
    def figures(self, pictures, step):
        for tag, figure in pictures.items():
            ax = figure.axes[0]
            drawn.append({"tag": tag, "points": len(ax.collections[0].get_offsets()), "title": ax.get_title()})


figures.picture_writers = lambda trainer: [Writer()] if trainer.is_global_zero else []
trainer = L.Trainer(
    accelerator="cpu", strategy="ddp", devices=2, max_epochs=1, logger=False, enable_checkpointing=False,
    enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
    callbacks=[figures.Figures(every_n_epochs=1)],
)
trainer.fit(TinyRegressor(), datamodule=TinyRegressionDataModule())
# One write of the whole line: both ranks share the pipe.
sys.stdout.write(json.dumps({"rank": trainer.global_rank, "drawn": drawn}) + "\\n")
"""


@pytest.mark.slow
def test_under_ddp_a_regressions_figures_gather_every_ranks_points(tmp_path):
    script = tmp_path / "fit.py"  # a script: Lightning starts the second rank by running it again
    script.write_text(DDP_SCRIPT)
    path = os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])  # tiny_tasks
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    reports = sorted((json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")), key=str)
    drawn = {report["rank"]: report["drawn"] for report in reports}
    assert drawn[1] == [], "only rank zero draws"
    assert [(d["tag"], d["points"]) for d in drawn[0]] == [("val/predicted_vs_true", 32), ("val/residuals", 32)]
    assert drawn[0][0]["title"].startswith("val: 32 samples (step ")
