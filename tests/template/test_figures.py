"""The pictures a run logs show what they claim, whatever the shape of its samples: each misclassified sample whole
under its own caption, images at their own size and in colour where they have it, signals as one line per channel,
tables with a confusion matrix only; and weight histograms at the first and the last epoch of every fit and every N
epochs between."""

import math
import time
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.loggers import TensorBoardLogger
from matplotlib.backends.backend_agg import FigureCanvasAgg
from scipy import ndimage
from torch.utils.data import DataLoader, TensorDataset

from lightning_runs.pictures import callbacks as figures
from lightning_runs.pictures.callbacks import Figures
from lightning_runs.pictures.samples import image_grid, misclassified_images, misclassified_signals, signal_plots
from support import read_events, run, split_sizes

# The shape families of the contract (contract/parts.py): per-sample shape and kind.
IMAGES = {"8x8": (8, 8), "28x28": (28, 28), "3x32x32": (3, 32, 32)}
SIGNALS = {"100": (100,), "2x50": (2, 50)}
SHAPES = {**{n: (s, "image") for n, s in IMAGES.items()}, **{n: (s, "signal") for n, s in SIGNALS.items()}}
SHAPES["table13"] = ((13,), "table")


class Box(NamedTuple):
    """A rectangle on the drawn picture, in screen pixels (y grows upwards)."""

    left: float
    bottom: float
    right: float
    top: float

    @property
    def centre(self) -> float:
        return (self.left + self.right) / 2

    def inside(self, figure) -> bool:
        return 0 <= self.left <= self.right <= figure.bbox.width and 0 <= self.bottom <= self.top <= figure.bbox.height


def rendered(figure) -> np.ndarray:
    """The figure as a user sees it: (H, W, 3) bytes, row 0 at the top."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].astype(int)


def crop(pixels: np.ndarray, ax, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    """The rendered pixels inside a rectangle given in the axes' data units."""
    (a, b), (c, d) = ax.transData.transform([(x0, y0), (x1, y1)])
    height = pixels.shape[0]  # display y grows upwards, rows downwards
    rows = sorted((round(height - b), round(height - d)))
    columns = sorted((round(a), round(c)))
    return pixels[rows[0] : rows[1], columns[0] : columns[1]]


def samples(shape: tuple, count: int = 20) -> torch.Tensor:
    """Random samples in [0.5, 1) with one pixel 0 inside each: every sample's whole extent has ink."""
    x = torch.rand(count, *shape, generator=torch.Generator().manual_seed(0)) / 2 + 0.5
    x.view(count, -1)[:, x[0].numel() // 2] = 0
    return x


def errors(count: int, classes: int = 10) -> tuple[torch.Tensor, torch.Tensor]:
    labels = torch.arange(count) % classes
    return labels, (labels + 1) % classes


def image_layout(images: torch.Tensor) -> tuple:
    """The misclassified figure of `images`, drawn: its captions, and each image's box as the figure puts it on screen,
    with the pixels inside it."""
    labels, predictions = errors(len(images))
    figure = misclassified_images(images, labels, predictions)
    figure.draw_without_rendering()
    (ax,) = figure.axes
    (image,) = ax.images
    pixels = np.asarray(image.get_array())  # (H, W) grey or (H, W, 3) colour, drawn over the image's extent
    ink = pixels != pixels[0, 0]  # the top-left pixel is in a caption band: background
    ink = ink.any(axis=-1) if ink.ndim == 3 else ink
    left, right, bottom, top = image.get_extent()
    per_pixel = ((right - left) / pixels.shape[1], (bottom - top) / pixels.shape[0])  # data units
    boxes, inside = [], []
    for rows, columns in ndimage.find_objects(ndimage.label(ink)[0]):  # in reading order
        corners = [
            (left + c * per_pixel[0], top + r * per_pixel[1])
            for c, r in [(columns.start, rows.stop), (columns.stop, rows.start)]
        ]
        (x0, y0), (x1, y1) = ax.transData.transform(corners)
        boxes.append(Box(x0, y0, x1, y1))
        inside.append(pixels[rows, columns])
    captions = [(text.get_text(), Box(*text.get_window_extent().extents)) for text in ax.texts]
    return figure, labels.tolist(), boxes, captions, inside


@pytest.mark.parametrize("shape", IMAGES.values(), ids=IMAGES.keys())
@pytest.mark.parametrize("count", [1, 2, 5, 8, 20])
def test_each_caption_is_centred_over_its_own_image_and_nothing_is_stretched_or_cropped(shape, count):
    images = samples(shape, count)
    figure, labels, boxes, captions, inside = image_layout(images)
    assert len(boxes) == len(captions) == count
    for label, box, (text, caption), pixels in zip(labels, boxes, captions, inside, strict=True):
        assert text == f"{label}→{(label + 1) % 10}"
        assert pixels.shape[:2] == shape[-2:], f"{text}: the whole image, not a crop"
        assert box.right - box.left == pytest.approx(box.top - box.bottom, abs=1), "square, not stretched"
        assert caption.centre == pytest.approx(box.centre, abs=1), f"{text} centred over its image"
        assert box.top <= caption.bottom <= box.top + (box.top - box.bottom) / 2, f"{text} just above it"
        assert box.inside(figure) and caption.inside(figure), "nothing cropped"
    assert len({round(box.top) for box in boxes}) == math.ceil(count / 8), "up to 8 a row"


def test_a_28x28_image_is_drawn_whole_with_its_own_pixels():
    images = samples((28, 28), 3)
    *_, inside = image_layout(images)
    for image, drawn in zip(images, inside, strict=True):
        np.testing.assert_allclose(drawn, (image / image.max()).numpy(), atol=1e-6)  # min is 0: min-max is /max


def test_the_8x8_digits_keep_their_size_on_screen():
    """12x12 cells of 1 inch at 60 dpi: 5 screen pixels per image pixel, as before other shapes were drawn."""
    _, _, boxes, *_ = image_layout(samples((8, 8), 3))
    assert [round(box.right - box.left) for box in boxes] == [40, 40, 40]


def test_no_errors_say_so():
    figure = misclassified_images(torch.zeros(0, 8, 8), torch.zeros(0, dtype=torch.long), torch.zeros(0))
    assert [text.get_text() for text in figure.axes[0].texts] == ["no misclassified samples"]
    figure = misclassified_signals(torch.zeros(0, 100), torch.zeros(0, dtype=torch.long), torch.zeros(0))
    assert [text.get_text() for text in figure.axes[0].texts] == ["no misclassified samples"]


def image_cells(figure, count: int) -> list[np.ndarray]:
    """The rendered pixels of each image of a misclassified figure, below its caption (the lower half of its cell)."""
    (ax,) = figure.axes
    (image,) = ax.images
    left, right, bottom, top = image.get_extent()
    columns = min(8, count)
    width, height = (right - left) / columns, (bottom - top) / math.ceil(count / columns)
    pixels = rendered(figure)
    cells = []
    for i in range(count):
        row, column = divmod(i, columns)
        x, y = left + column * width, top + row * height
        cells.append(crop(pixels, ax, x + 0.3 * width, y + 0.5 * height, x + 0.7 * width, y + 0.95 * height))
    return cells


@pytest.mark.parametrize("shape", IMAGES.values(), ids=IMAGES.keys())
def test_every_misclassified_image_shows_its_pixels(shape):
    images = samples(shape, 12)
    cells = image_cells(misclassified_images(images, *errors(12)), 12)
    assert all(cell.size and cell.std() > 10 for cell in cells), "a blank cell"


def test_colour_images_keep_their_colour_and_other_channel_counts_are_grey():
    red = samples((3, 32, 32), 4)
    red[:, 1:] *= 0.2  # mostly red
    (cell, *_) = image_cells(misclassified_images(red, *errors(4)), 4)
    assert (cell[..., 0] - cell[..., 1]).max() > 50, "red is red on screen"
    grid = image_grid(red)
    assert (grid[0] - grid[1]).abs().max() > 0.2
    for channels in [(8, 8), (1, 8, 8), (5, 8, 8)]:
        grid = image_grid(samples(channels, 4))
        assert torch.equal(grid[0], grid[1]) and torch.equal(grid[1], grid[2]), f"{channels}: grey"
        (cell, *_) = image_cells(misclassified_images(samples(channels, 4), *errors(4)), 4)
        assert (cell[..., 0] == cell[..., 1]).all()


@pytest.mark.parametrize(("shape", "factor"), [((8, 8), 4), ((28, 28), 2), ((3, 32, 32), 1), ((1, 64, 48), 1)])
def test_the_input_grid_upscales_small_images_to_32_pixels_a_side(shape, factor):
    images = samples(shape, 10)  # two rows of 8 (6 blank cells), 1 px of padding around each image
    height, width = shape[-2:]
    grid = image_grid(images)
    assert tuple(grid.shape) == (3, (2 * (height + 1) + 1) * factor, (8 * (width + 1) + 1) * factor)
    assert min(height, width) * factor >= 32 or factor == 1
    first = grid[:, factor : (height + 1) * factor, factor : (width + 1) * factor]  # the first image, upscaled
    expected = images[0] if shape[0] == 3 else images[0].reshape(-1, height, width).mean(0, keepdim=True)
    torch.testing.assert_close(first[: len(expected), ::factor, ::factor], expected / expected.max())  # min is 0


def test_each_input_image_is_scaled_on_its_own():
    images = torch.stack([torch.rand(8, 8), 1000 * torch.rand(8, 8) - 500])  # very different ranges
    grid = image_grid(images)[0, 4:36]  # upscaled 4x: the first row of images, below the top padding
    for column in (0, 1):
        cell = grid[:, (1 + 9 * column) * 4 : (9 + 9 * column) * 4]
        assert cell.min() == 0 and cell.max() == 1, f"image {column} spans black to white"


@pytest.mark.parametrize("shape", SIGNALS.values(), ids=SIGNALS.keys())
def test_a_signal_is_one_line_per_channel_under_its_caption(shape):
    signals = samples(shape, 12)
    labels, predictions = errors(12)
    figure = misclassified_signals(signals, labels, predictions)
    (ax,) = figure.axes
    channels = shape[0] if len(shape) == 2 else 1
    assert len(ax.lines) == 12 * channels
    assert all(len(line.get_xdata()) == shape[-1] for line in ax.lines), "every point of every line"
    assert len({line.get_color() for line in ax.lines}) == channels, "a colour a channel"
    assert [text.get_text() for text in ax.texts] == [f"{t}→{p}" for t, p in zip(labels, predictions, strict=True)]
    pixels = rendered(figure)
    for i in range(12):  # inside each plot's frame, below its caption: the lines' ink
        row, column = divmod(i, 8)
        assert crop(pixels, ax, column + 0.1, row + 0.5, column + 0.9, row + 0.9).std() > 10, f"signal {i} blank"


def test_each_channel_of_a_signal_fills_its_plot_whatever_its_scale():
    """A burst on a channel in millivolts beside one offset by thousands: both are drawn across the plot's height,
    not the small one as a flat line under the large one."""
    time = torch.linspace(0, 6.28, 50)
    signals = torch.stack([time.sin() * 1e-3, time.cos() * 10 + 5000])[None]  # (1, 2, 50)
    (ax,) = signal_plots(signals).axes
    spans = [float(max(line.get_ydata()) - min(line.get_ydata())) for line in ax.lines]
    assert len(spans) == 2 and min(spans) > 0.5 * max(spans), spans


def test_a_signal_of_many_channels_draws_the_first_eight_and_says_so():
    figure = signal_plots(samples((20, 30), 2), title="train inputs")
    assert len(figure.axes[0].lines) == 2 * 8
    assert figure.get_suptitle() == "train inputs (first 8 of 20 channels)"


# The callback on synthetic batches: a stand-in trainer, a writer that keeps what it is given.
class Kept:
    def __init__(self) -> None:
        self.pictures: dict = {}

    def images(self, images: dict, step: int) -> None:
        self.pictures.update(images)

    def figures(self, figures: dict, step: int) -> None:
        self.pictures.update(figures)


def stand_in_trainer(kind: str | None):
    return SimpleNamespace(
        datamodule=None if kind is None else SimpleNamespace(sample_kind=kind),
        sanity_checking=False,
        strategy=SimpleNamespace(root_device=torch.device("cpu")),
        world_size=1,
        is_global_zero=True,
        global_step=0,
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


class Linear(L.LightningModule):
    """A tiny classifier of any sample shape, returning its logits from validation as the contract asks."""

    def __init__(self, features: int, classes: int) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(features, classes)

    def training_step(self, batch, batch_idx):
        return torch.nn.functional.cross_entropy(self.layer(batch[0].flatten(1)), batch[1])

    def validation_step(self, batch, batch_idx):
        return self.layer(batch[0].flatten(1))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Shapes(L.LightningDataModule):
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
    trainer.fit(Linear(math.prod(shape), 4), datamodule=Shapes(shape, kind))
    tags = set(read_events(tmp_path).Tags()["images"])
    sampled = {"train/inputs", "val/misclassified"} if kind != "table" else set()
    assert tags == {"val/confusion_matrix", *sampled}


# One step an epoch, so that the global step after epoch e is e: the whole training split in one batch (and the
# validation split too). Not --trainer.limit_train_batches=1, which parses as the float 1.0: every batch.
TINY = [f"--data.batch_size={split_sizes()['train']}", "--figures.every_n_epochs=0"]


@pytest.mark.parametrize(
    "how_long,steps",
    [
        (["--trainer.max_epochs=1"], [1]),
        (["--trainer.max_epochs=4"], [1, 4]),
        pytest.param(["--trainer.max_epochs=25"], [1, 10, 20, 25], marks=pytest.mark.slow),
        (["--trainer.max_epochs=25", "--trainer.max_steps=7"], [1, 7]),  # a fit that ends before max_epochs
    ],
)
def test_histograms_come_at_the_first_and_the_last_epoch_and_every_n_between(how_long, steps):
    run("fit", *TINY, *how_long, "--histograms.every_n_epochs=10", "--histograms.gradients=true")
    events = read_events(Path("runs/digits/version_0"))
    histograms = events.Tags()["histograms"]
    assert {tag.split("/")[0] for tag in histograms} == {"weights", "gradients"}
    for tag in histograms:
        assert [event.step for event in events.Histograms(tag)] == steps, tag
