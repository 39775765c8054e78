"""The Figures callback gives each kind of sample its pictures, read from the batches and the logits validation returns
(no LightningModule read): images and signals their inputs and misclassified samples, tables a confusion matrix only;
outputs that are not logits give none and no error."""

import time
from types import SimpleNamespace

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.loggers import TensorBoardLogger
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from test_figures_of_samples import IMAGES, SIGNALS, image_cells
from torch.utils.data import DataLoader, TensorDataset

from lightning_runs.pictures import callbacks as figures
from lightning_runs.pictures.callbacks import Figures
from tiny_tasks import TinyClassifier, samples

# Per-sample shape and kind, as a DataModule's sample_kind names it.
SHAPES = {**{n: (s, "image") for n, s in IMAGES.items()}, **{n: (s, "signal") for n, s in SIGNALS.items()}}
SHAPES["table13"] = ((13,), "table")


# The callback on synthetic batches: a stand-in trainer, a writer that keeps what it is given (test_figures_by_task.py
# uses them too).
class Kept:
    """A picture writer that keeps the images and figures it is given."""

    def __init__(self) -> None:
        self.pictures: dict = {}

    def images(self, images: dict, step: int) -> None:
        self.pictures.update(images)

    def figures(self, figures: dict, step: int) -> None:
        self.pictures.update(figures)


def stand_in_trainer(kind: str | None, global_step: int = 0):
    """What the callback reads of a Trainer, validating on one CPU process; `kind` the DataModule's sample_kind (None:
    no DataModule)."""
    return SimpleNamespace(
        datamodule=None if kind is None else SimpleNamespace(sample_kind=kind),
        sanity_checking=False,
        strategy=SimpleNamespace(root_device=torch.device("cpu")),
        world_size=1,
        is_global_zero=True,
        global_step=global_step,
        current_epoch=0,
        state=SimpleNamespace(fn="validate"),
    )


def validate(monkeypatch, kind, inputs, labels, outputs, batch_size: int = 8, **options) -> tuple[dict, Figures]:
    """The pictures the callback writes for one validation run over `inputs` (the first batch also trains)."""
    kept = Kept()
    monkeypatch.setattr(figures, "picture_writers", lambda trainer: [kept])
    callback, trainer = Figures(every_n_epochs=1, **options), stand_in_trainer(kind)
    callback.setup(trainer, None, "validate")  # no LightningModule: the callback must not read one
    callback.on_train_batch_start(trainer, None, (inputs[:batch_size], labels[:batch_size]), 0)
    for start in range(0, len(labels), batch_size):
        batch = inputs[start : start + batch_size], labels[start : start + batch_size]
        logits = outputs(start, batch_size) if callable(outputs) else outputs
        callback.on_validation_batch_end(trainer, None, logits, batch, start // batch_size)
    callback.on_validation_epoch_end(trainer, None)
    return kept.pictures, callback


def half_wrong(count: int, classes: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """Labels and the logits of a model that gets every second sample wrong."""
    labels = torch.arange(count) % classes
    predicted = (labels + torch.arange(count) % 2) % classes
    return labels, torch.nn.functional.one_hot(predicted, classes).float()


@pytest.mark.parametrize("name", SHAPES)
def test_each_kind_of_sample_gets_its_pictures(monkeypatch, name):
    shape, kind = SHAPES[name]
    inputs, (labels, logits) = samples(shape, 20), half_wrong(20)
    pictures, callback = validate(monkeypatch, kind, inputs, labels, lambda i, n: logits[i : i + n])
    sampled = {"train/inputs", "val/misclassified"} if kind != "table" else set()
    assert set(pictures) == {"val/confusion_matrix", *sampled}
    assert pictures["val/confusion_matrix"].axes[0].get_title() == "val: 20 samples, 10 right (step 0)"
    assert callback.matrices["val"].shape == (3, 3) and int(callback.matrices["val"].trace()) == 10
    if kind == "image":
        assert pictures["train/inputs"].shape[0] == 3 and pictures["train/inputs"].std() > 0
        cells = image_cells(pictures["val/misclassified"], 10)
        assert all(cell.std() > 10 for cell in cells), "a misclassified image is blank"
        assert np.asarray(pictures["val/misclassified"].axes[0].images[0].get_array()).shape[:2] == (
            2 * (shape[-2] * 3 // 2),  # two rows of cells, each the image and a caption band half its side
            8 * (shape[-1] * 3 // 2),
        ), "each image whole in its cell"
    if kind == "signal":
        channels = shape[0] if len(shape) == 2 else 1
        assert len(pictures["train/inputs"].axes[0].lines) == 8 * channels, "up to 8 inputs, a line a channel"
        assert len(pictures["val/misclassified"].axes[0].lines) == 10 * channels


def test_misclassified_samples_stop_at_max_images(monkeypatch):
    inputs, (labels, logits) = samples((8, 8), 40), half_wrong(40)
    pictures, _ = validate(monkeypatch, "image", inputs, labels, lambda i, n: logits[i : i + n], max_images=6)
    assert len(pictures["val/misclassified"].axes[0].texts) == 6


def test_the_class_count_is_the_width_of_the_logits(monkeypatch):
    inputs, (labels, logits) = samples((13,), 20), half_wrong(20, classes=5)
    _, callback = validate(monkeypatch, "table", inputs, labels, lambda i, n: logits[i : i + n])
    assert callback.matrices["val"].shape == (5, 5) and int(callback.matrices["val"].sum()) == 20


def test_a_confusion_matrix_of_more_classes_than_a_figure_shows_is_computed_but_not_drawn(monkeypatch, capsys):
    inputs, (labels, logits) = samples((8, 8), 40), half_wrong(40, classes=1500)  # drawing it took minutes
    started = time.monotonic()
    pictures, callback = validate(monkeypatch, "image", inputs, labels, lambda i, n: logits[i : i + n])
    assert time.monotonic() - started < 10 and callback.matrices["val"].shape == (1500, 1500)
    assert set(pictures) == {"train/inputs", "val/misclassified"}
    said = capsys.readouterr().out.splitlines()
    assert said == [
        "val/confusion_matrix: 1500 classes, more than the 100 a figure shows (lightning_runs/limits.py); not drawn"
    ]


def test_without_a_datamodule_only_the_confusion_matrix(monkeypatch):
    inputs, (labels, logits) = samples((8, 8), 20), half_wrong(20)
    pictures, _ = validate(monkeypatch, None, inputs, labels, lambda i, n: logits[i : i + n])
    assert set(pictures) == {"val/confusion_matrix"}


@pytest.mark.parametrize(
    "outputs",
    [
        None,
        torch.tensor(0.5),  # a loss
        {"logits": torch.zeros(8, 3)},
        lambda i, n: torch.zeros(n),  # one value a sample
        lambda i, n: torch.zeros(n + 1, 3),  # not one row a sample
        lambda i, n: torch.zeros(n, 3, 2),
    ],
    ids=["none", "loss", "dict", "values", "rows", "3d"],
)
def test_outputs_that_are_not_logits_give_no_figures_and_no_error(monkeypatch, outputs):
    inputs, (labels, _) = samples((8, 8), 20), half_wrong(20)
    pictures, callback = validate(monkeypatch, "image", inputs, labels, outputs)
    assert set(pictures) == {"train/inputs"} and callback.matrices == {}


class Shapes(L.LightningDataModule):
    """32 samples of `shape` and `kind`, 4 classes, 16 a batch, the same for training and validation."""

    def __init__(self, shape: tuple, kind: str) -> None:
        super().__init__()
        self.sample_kind = kind
        self.data = TensorDataset(samples(shape, 32), torch.arange(32) % 4)

    def train_dataloader(self):
        return DataLoader(self.data, batch_size=16)

    def val_dataloader(self):
        return DataLoader(self.data, batch_size=16)


@pytest.mark.parametrize("name", ["3x32x32", "2x50", "table13"])
def test_a_fit_logs_the_pictures_of_its_kind(tmp_path, name):
    shape, kind = SHAPES[name]
    trainer = L.Trainer(
        max_epochs=1,
        logger=TensorBoardLogger(tmp_path, name="", version=""),
        callbacks=[Figures(every_n_epochs=1)],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(TinyClassifier(4, shape), datamodule=Shapes(shape, kind))
    events = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    events.Reload()
    tags = set(events.Tags()["images"])
    sampled = {"train/inputs", "val/misclassified"} if kind != "table" else set()
    assert tags == {"val/confusion_matrix", *sampled}
