"""How the pictures of samples are drawn (pictures/samples.py), whatever their shape: each misclassified sample whole
under its own caption, images at their own size and in colour where they have it, the input grid upscaled and each
image scaled on its own, signals as one line per channel that fills its plot."""

import math
from typing import NamedTuple

import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from scipy import ndimage

from lightning_runs.pictures.samples import image_grid, misclassified_images, misclassified_signals, signal_plots
from tiny_tasks import samples

# The shape families of the contract (contract/parts.py): per-sample shape.
IMAGES = {"8x8": (8, 8), "28x28": (28, 28), "3x32x32": (3, 32, 32)}
SIGNALS = {"100": (100,), "2x50": (2, 50)}


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


def test_8x8_images_keep_their_size_on_screen():
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
