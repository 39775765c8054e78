"""The pictures a run logs show what they claim: each misclassified digit under its own caption, whatever their
number, and weight histograms at the first and the last epoch of every fit and every N epochs between."""

import math
from pathlib import Path
from typing import NamedTuple

import pytest
import torch
from scipy import ndimage

from project.core.figures import _misclassified_figure
from support import read_events, run, split_sizes


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


def layout(count: int) -> tuple:
    """The figure for `count` errors, drawn: its captions, and each digit's box as the image puts it on screen."""
    images = torch.ones(count, 8, 8)  # solid squares: a digit's ink is exactly its 8x8 box
    labels = torch.arange(count) % 10
    figure = _misclassified_figure(images, labels, (labels + 1) % 10)
    figure.draw_without_rendering()
    (ax,) = figure.axes
    (image,) = ax.images
    pixels = image.get_array()  # (H, W), drawn over the image's extent
    left, right, bottom, top = image.get_extent()
    per_pixel = ((right - left) / pixels.shape[1], (bottom - top) / pixels.shape[0])  # data units
    digits = []
    for rows, columns in ndimage.find_objects(ndimage.label(pixels > 0)[0]):  # in reading order
        corners = [
            (left + c * per_pixel[0], top + r * per_pixel[1])
            for c, r in [(columns.start, rows.stop), (columns.stop, rows.start)]
        ]
        (x0, y0), (x1, y1) = ax.transData.transform(corners)
        digits.append(Box(x0, y0, x1, y1))
    captions = [(text.get_text(), Box(*text.get_window_extent().extents)) for text in ax.texts]
    return figure, labels.tolist(), digits, captions


@pytest.mark.parametrize("count", [1, 2, 5, 8, 20])
def test_each_caption_is_centred_over_its_own_digit_and_nothing_is_stretched_or_cropped(count):
    figure, labels, digits, captions = layout(count)
    assert len(digits) == len(captions) == count
    for label, digit, (text, caption) in zip(labels, digits, captions, strict=True):
        assert text == f"{label}→{(label + 1) % 10}"
        assert digit.right - digit.left == pytest.approx(digit.top - digit.bottom, abs=1), "square, not stretched"
        assert caption.centre == pytest.approx(digit.centre, abs=1), f"{text} centred over its digit"
        assert digit.top <= caption.bottom <= digit.top + (digit.top - digit.bottom) / 2, f"{text} just above it"
        assert digit.inside(figure) and caption.inside(figure), "nothing cropped"
    assert len({round(digit.top) for digit in digits}) == math.ceil(count / 8), "up to 8 a row"


def test_no_errors_say_so():
    figure = _misclassified_figure(torch.zeros(0, 8, 8), torch.zeros(0, dtype=torch.long), torch.zeros(0))
    assert [text.get_text() for text in figure.axes[0].texts] == ["no misclassified digits"]


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
