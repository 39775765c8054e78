"""How samples are drawn, by their kind (contract/parts.py):
images as a pixel grid, each image scaled on its own; signals as
small line plots, each channel scaled on its own; the captioned grids of misclassified samples. callbacks.py decides
when and what."""

import math

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torchvision.utils import make_grid

COLUMNS = 8  # samples a row, in every figure
MIN_SIDE = 32  # pixels: smaller images are upscaled by a whole factor (nearest neighbour keeps them sharp)
MAX_CHANNELS = 8  # lines a signal: more would be a tangle, and a Line2D each costs drawing time
TRUE_PREDICTED = "true → predicted class"


def scaled(samples: torch.Tensor) -> torch.Tensor:
    """Each sample min-max scaled to [0, 1] on its own; a constant one becomes mid-grey, not blank."""
    flat = samples.float().flatten(1)
    low, high = flat.amin(dim=1, keepdim=True), flat.amax(dim=1, keepdim=True)
    span = high - low
    flat = torch.where(span > 0, (flat - low) / span.clamp(min=1e-12), torch.full_like(flat, 0.5))
    return flat.view(samples.shape)


def as_pictures(images: torch.Tensor) -> torch.Tensor:
    """(N, H, W) or (N, C, H, W) -> (N, 1, H, W) grey or (N, 3, H, W) colour, each in [0, 1]: three channels are
    colour, one is grey, any other count is shown as the channels' mean."""
    images = images.float()
    if images.ndim == 3:
        images = images[:, None]
    elif images.shape[1] not in (1, 3):
        images = images.mean(dim=1, keepdim=True)
    return scaled(images)


def image_grid(images: torch.Tensor) -> torch.Tensor:
    """The images as one (3, H, W) picture in [0, 1], 8 a row, upscaled so that each side has at least ~32 px."""
    pictures = as_pictures(images.cpu())
    factor = max(1, math.ceil(MIN_SIDE / min(pictures.shape[-2:])))
    grid = make_grid(pictures, nrow=COLUMNS, padding=1, pad_value=0.5)  # (3, H, W): grey repeated to three
    return F.interpolate(grid[None], scale_factor=factor, mode="nearest")[0]


# A grid of captioned cells, one data unit per image pixel: an (H, W) image sits in a cell of (H + CAPTION, W + 2 PAD),
# PAD a quarter and CAPTION half its longer side (28x28: 42x42 cells, 7 px either side, 14 above).
CAPTION_INCHES, TITLE_INCHES, MIN_WIDTH_INCHES = 0.33, 0.4, 3.0  # the title needs ~3 inches: 1 or 2 cells are narrower
# A cell's longer side: an inch per 12 pixels (a 12 px cell: 1 inch, 5 screen pixels per pixel at 60 dpi), kept between
# 1 and 2 inches (28x28: 2 inches, ~3 screen pixels per pixel): 8 larger images still fit a screen's width.
CELL_INCHES = (1.0, 2.0)


def misclassified_images(images: torch.Tensor, labels: torch.Tensor, predictions: torch.Tensor) -> Figure:
    """The images in one picture, each captioned `true→predicted` centred over it; as many columns as images, up
    to 8. Each image whole, at its own size, in colour where it has three channels.

    One axes with one image and a caption per sample: a subplot per sample took matplotlib 0.3 s a figure.
    """
    count = len(labels)
    if count == 0:
        return nothing_misclassified()
    pictures = as_pictures(images.cpu())  # (M, 1 or 3, H, W)
    height, width = pictures.shape[-2:]
    pad, caption = math.ceil(max(height, width) / 4), math.ceil(max(height, width) / 2)
    cell_w, cell_h = width + 2 * pad, height + caption
    columns = min(COLUMNS, count)
    rows = math.ceil(count / columns)
    longer = max(cell_w, cell_h)
    inches = min(max(CELL_INCHES[0], longer / 12), CELL_INCHES[1]) / longer  # per data unit
    colour = pictures.shape[1] == 3
    # Grey is ink on white (0 shows white); colour keeps its own white margins.
    cells = F.pad(pictures, (pad, pad, caption, 0), value=1.0 if colour else 0.0)
    grid = make_grid(cells, nrow=columns, padding=0, pad_value=1.0 if colour else 0.0)  # (3, rows*cell_h, cols*cell_w)
    figure, ax = _grid_axes(columns * cell_w * inches, rows * cell_h * inches, TRUE_PREDICTED)
    if colour:
        ax.imshow(grid.permute(1, 2, 0).numpy(), extent=(0, columns * cell_w, rows * cell_h, 0))
    else:
        ax.imshow(grid[0].numpy(), cmap="gray_r", vmin=0, vmax=1, extent=(0, columns * cell_w, rows * cell_h, 0))
    for i, text in enumerate(_captions(labels, predictions)):
        row, column = divmod(i, columns)  # caption: the cell's centre line, the middle of its top band
        ax.text((column + 0.5) * cell_w, row * cell_h + caption / 2, text, fontsize=12, ha="center", va="center")
    return figure


# Signals: cells of 2 x 1.2 inches, the line plot below a caption band, a light frame around each plot.
SIGNAL_INCHES, MARGIN = (2.0, 1.2), 0.05  # MARGIN: fraction of a cell left blank around its plot


def signal_plots(signals: torch.Tensor, captions: list[str] | None = None, title: str = "") -> Figure:
    """(N, L) or (N, C, L) signals as small line plots, 8 a row, one line per channel (the first 8 channels), each
    channel of each sample scaled on its own; captioned above each plot where `captions` are given.

    One axes for all of them, each plot drawn into its own cell: a subplot per sample took matplotlib 0.3 s a figure.
    """
    signals = signals.detach().float().cpu()
    if signals.ndim == 2:
        signals = signals[:, None]  # (N, 1, L)
    channels = signals.shape[1]
    # Each channel of each sample scaled on its own: channels on different scales (a sensor in volts beside one in
    # millivolts) would otherwise draw all but the largest as flat lines.
    signals = signals[:, :MAX_CHANNELS]
    signals = scaled(signals.reshape(-1, 1, signals.shape[-1])).reshape(signals.shape)  # (N, C', L)
    count, length = len(signals), signals.shape[-1]
    columns = min(COLUMNS, max(count, 1))
    rows = max(1, math.ceil(count / columns))
    band = CAPTION_INCHES / SIGNAL_INCHES[1] if captions else 0.0  # of a cell's height
    if channels > MAX_CHANNELS:
        title = f"{title} (first {MAX_CHANNELS} of {channels} channels)".strip()
    figure, ax = _grid_axes(columns * SIGNAL_INCHES[0], rows * SIGNAL_INCHES[1], title)
    ax.set_xlim(0, columns)
    ax.set_ylim(rows, 0)  # row 0 at the top, as in the image grids
    x = torch.linspace(MARGIN, 1 - MARGIN, length) if length > 1 else torch.tensor([0.5])
    top, bottom = band + MARGIN, 1 - MARGIN  # the plot's band inside a cell, in cell heights from its top
    for i, sample in enumerate(signals):
        row, column = divmod(i, columns)
        frame = (column + MARGIN / 2, row + top - MARGIN / 2), 1 - MARGIN, bottom - top + MARGIN
        ax.add_patch(Rectangle(*frame, fill=False, edgecolor="0.85", linewidth=0.8))
        for channel, values in enumerate(sample):  # higher values upwards: the y axis grows down
            ax.plot(column + x, row + bottom - values * (bottom - top), color=f"C{channel}", linewidth=1)
        if captions:
            ax.text(column + 0.5, row + band / 2, captions[i], fontsize=12, ha="center", va="center")
    return figure


def misclassified_signals(signals: torch.Tensor, labels: torch.Tensor, predictions: torch.Tensor) -> Figure:
    """The signals as line plots, each titled `true→predicted`."""
    if len(labels) == 0:
        return nothing_misclassified()
    return signal_plots(signals, _captions(labels, predictions), TRUE_PREDICTED)


MISCLASSIFIED = {"image": misclassified_images, "signal": misclassified_signals}  # by sample kind
BATCH_DIMS = {"image": (3, 4), "signal": (2, 3)}  # (N, H, W) or (N, C, H, W); (N, L) or (N, C, L)


def drawable(kind: str | None, samples) -> bool:
    """Whether a batch of `samples` has a shape this module draws for their kind (and at least one sample)."""
    return (
        isinstance(samples, torch.Tensor)
        and samples.ndim in BATCH_DIMS.get(kind, ())
        and len(samples) > 0
        and samples[0].numel() > 0
    )


def nothing_misclassified() -> Figure:
    figure, ax = _grid_axes(MIN_WIDTH_INCHES, 1.0, TRUE_PREDICTED)
    ax.text(0.5, 0.5, "no misclassified samples", fontsize=12, ha="center", transform=ax.transAxes)
    return figure


def _captions(labels: torch.Tensor, predictions: torch.Tensor) -> list[str]:
    return [f"{label}→{prediction}" for label, prediction in zip(labels.tolist(), predictions.tolist(), strict=True)]


def _grid_axes(width: float, height: float, title: str):
    """A figure with `title` and one axes of exactly (width, height) inches below it, centred: its aspect is the
    grid's, so nothing stretches or crops it."""
    figure_width = max(width, MIN_WIDTH_INCHES)
    figure = Figure(figsize=(figure_width, height + TITLE_INCHES), dpi=60)
    figure.suptitle(title)
    left = (1 - width / figure_width) / 2
    ax = figure.add_axes((left, 0, width / figure_width, height / (height + TITLE_INCHES)))
    ax.set_axis_off()
    return figure, ax
