"""Pictures of a run: the input digits, the misclassified ones, confusion matrices and weight histograms, for each
logger that shows them (pictures.py)."""

import math

import torch
import torch.nn.functional as F
from jsonargparse.typing import NonNegativeInt, PositiveInt
from lightning.pytorch.callbacks import Callback
from matplotlib.figure import Figure
from torchmetrics.classification import MulticlassConfusionMatrix
from torchvision.utils import make_grid

from project.core.distributed import gather_rows
from project.core.pictures import picture_writers

UPSCALE = 4  # 8x8 digits are specks in TensorBoard; nearest-neighbour upscaling keeps their pixels sharp


def _every(n: int, epoch: int) -> bool:
    return n > 0 and (epoch + 1) % n == 0


class Figures(Callback):
    """`train/inputs` once; `val/misclassified` and `val/confusion_matrix` every N epochs and at the end of fit;
    `test/misclassified` and `test/confusion_matrix` after test.

    The validation and test steps return their logits to reach `on_*_batch_end`. Every rank counts its shard
    of the confusion matrix and torchmetrics sums them; the misclassified digits are gathered from every rank.
    Only rank zero draws and writes. `every_n_epochs: 0` turns all of it off.
    """

    # Every 20 epochs: about 0.2 s a time (two matplotlib figures), under 3% of the default 100-epoch fit.
    def __init__(self, every_n_epochs: NonNegativeInt = 20, max_images: PositiveInt = 32) -> None:
        self.every_n_epochs, self.max_images = every_n_epochs, max_images
        self.matrices: dict[str, torch.Tensor] = {}  # the latest (C, C) matrix of each stage, on every rank
        self._pending = None  # rank zero: the last validation's pictures, when not written yet

    def setup(self, trainer, pl_module, stage: str) -> None:
        classes = pl_module.hparams.num_classes
        device = trainer.strategy.root_device
        self._confusion = {
            s: MulticlassConfusionMatrix(classes, validate_args=False).to(device) for s in ("val", "test")
        }
        self._wrong = {s: [] for s in ("val", "test")}  # per batch: (images, labels, predictions) misclassified

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        writers = picture_writers(trainer)
        if not writers or self.every_n_epochs == 0 or trainer.global_step != 0 or batch_idx != 0:
            return  # once per run: a resumed run already has it
        images = _as_nchw(batch[0][: self.max_images])  # (N, 1, 8, 8)
        grid = make_grid(images.float().cpu(), nrow=8, padding=1, normalize=True, pad_value=0.5)  # (3, H, W)
        for writer in writers:
            writer.images({"train/inputs": F.interpolate(grid[None], scale_factor=UPSCALE)[0]}, 0)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        if not trainer.sanity_checking:
            self._collect("val", outputs, batch)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self._collect("test", outputs, batch)

    def _collect(self, stage: str, logits: torch.Tensor, batch) -> None:
        if self.every_n_epochs == 0:
            return
        images, labels = batch[0], batch[1]
        predictions = logits.argmax(dim=-1)  # (N,)
        self._confusion[stage].update(predictions, labels)
        room = self.max_images - sum(len(w[1]) for w in self._wrong[stage])
        if room > 0:  # once full, no more boolean indexing (a GPU sync) for the rest of the epoch
            wrong = predictions != labels
            self._wrong[stage].append((images[wrong][:room], labels[wrong][:room], predictions[wrong][:room]))

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or self.every_n_epochs == 0:
            self._confusion["val"].reset()
            self._wrong["val"].clear()
            return
        pictures = self._finish("val", trainer, pl_module)  # collective: every rank, every epoch
        fitting = trainer.state.fn == "fit"
        if not fitting or _every(self.every_n_epochs, trainer.current_epoch):
            self._write(trainer, "val", pictures)
            pictures = None
        # Kept for the end of fit, whose last epoch may not be one of every N.
        self._pending = pictures if fitting else None

    def on_fit_end(self, trainer, pl_module) -> None:
        if self._pending is not None:
            self._write(trainer, "val", self._pending)
            self._pending = None

    def on_test_epoch_end(self, trainer, pl_module) -> None:
        if self.every_n_epochs > 0:
            self._write(trainer, "test", self._finish("test", trainer, pl_module))

    def _finish(self, stage: str, trainer, pl_module) -> tuple | None:
        """The stage's confusion matrix over all ranks and up to `max_images` misclassified digits of all ranks."""
        matrix = self.matrices[stage] = self._confusion[stage].compute()  # (C, C): sums every rank's counts
        self._confusion[stage].reset()
        wrong, self._wrong[stage] = self._wrong[stage], []
        images, labels, predictions = (torch.cat(parts) for parts in zip(*wrong, strict=True))  # (M, ...), M <= max
        if trainer.world_size > 1:
            images, labels, predictions = _gather(trainer, self.max_images, images, labels, predictions)
        if not trainer.is_global_zero:
            return None
        return matrix.cpu(), images.cpu(), labels.cpu(), predictions.cpu(), trainer.global_step

    def _write(self, trainer, stage: str, drawn: tuple | None) -> None:
        writers = picture_writers(trainer)
        if not writers or drawn is None:
            return
        matrix, images, labels, predictions, step = drawn
        figure = Figure(figsize=(5, 4.5), dpi=64)  # ~27 KB a PNG; constrained layout would add 50 ms a figure
        ax = figure.subplots()
        self._confusion[stage].plot(val=matrix, ax=ax)
        ax.set_title(f"{stage}: {int(matrix.sum())} digits, {int(matrix.trace())} right (step {step})")
        figures = {f"{stage}/confusion_matrix": figure}
        figures[f"{stage}/misclassified"] = _misclassified_figure(images, labels, predictions)
        for writer in writers:
            writer.figures(figures, step)


def _as_nchw(images: torch.Tensor) -> torch.Tensor:
    return images.unsqueeze(1) if images.ndim == 3 else images  # (N, H, W) -> (N, 1, H, W)


def _gather(trainer, size: int, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Every rank's misclassified digits, the first `size` of them."""
    gathered = []
    for tensor in tensors:
        rows, counts = gather_rows(trainer, tensor)  # (W, R_max, ...)
        gathered.append(torch.cat([rows[r, :n] for r, n in enumerate(counts.tolist())])[:size])
    return tuple(gathered)


# The misclassified digits: up to 8 a row, each 8x8 digit in a 12x12 cell (2 px either side, 4 above for its
# caption); one data unit per grid pixel; 5 inches a cell of width at 60 dpi: 5 screen pixels per digit pixel.
COLUMNS, CELL, CAPTION = 8, 12, 4
CELL_INCHES, TITLE_INCHES, MIN_WIDTH_INCHES = 1.0, 0.4, 3.0  # the title needs ~3 inches: 1 or 2 digits are narrower


def _misclassified_figure(images: torch.Tensor, labels: torch.Tensor, predictions: torch.Tensor) -> Figure:
    """The digits in one image, each captioned `true→predicted` centred over it; as many columns as digits, up to 8.

    One axes with one image and a caption per digit: a subplot per digit took matplotlib 0.3 s a figure.
    """
    count = len(labels)
    columns = min(COLUMNS, max(count, 1))
    rows = max(1, math.ceil(count / columns))
    width, height = max(columns * CELL_INCHES, MIN_WIDTH_INCHES), rows * CELL_INCHES
    figure = Figure(figsize=(width, height + TITLE_INCHES), dpi=60)
    figure.suptitle("true → predicted class")
    # Exactly the grid's size, centred: the axes' aspect is the image's, so nothing stretches or crops it.
    left = (1 - columns * CELL_INCHES / width) / 2
    ax = figure.add_axes((left, 0, columns * CELL_INCHES / width, height / (height + TITLE_INCHES)))
    ax.set_axis_off()
    if count == 0:
        ax.text(0.5, 0.5, "no misclassified digits", fontsize=12, ha="center", transform=ax.transAxes)
        return figure
    digits = _as_nchw(images).float().mean(dim=1, keepdim=True)  # (M, 1, 8, 8), channels averaged
    side = (CELL - digits.shape[-1]) // 2
    digits = F.pad(digits / digits.amax().clamp(min=1e-6), (side, side, CAPTION, CELL - CAPTION - digits.shape[-2]))
    grid = make_grid(digits, nrow=columns, padding=0)[0]  # (rows * CELL, columns * CELL): blank cells after the last
    ax.imshow(grid.numpy(), cmap="gray_r", vmin=0, vmax=1, extent=(0, columns * CELL, rows * CELL, 0))
    for i, (label, prediction) in enumerate(zip(labels.tolist(), predictions.tolist(), strict=True)):
        row, column = divmod(i, columns)
        x, y = (column + 0.5) * CELL, row * CELL + CAPTION / 2  # the cell's centre line, the middle of its top band
        ax.text(x, y, f"{label}→{prediction}", fontsize=12, ha="center", va="center")
    return figure


class Histograms(Callback):
    """`weights/<parameter>` after the first and the last epoch of every fit and every N epochs between, and with
    `gradients` also `gradients/<parameter>` of those epochs' last steps (before clipping). Never per step: each
    histogram costs about a millisecond and 1-2 KB. `every_n_epochs: 0` turns them off.
    """

    def __init__(self, every_n_epochs: NonNegativeInt = 10, gradients: bool = False) -> None:
        self.every_n_epochs, self.gradients = every_n_epochs, gradients
        self._last_batch = False
        self._first_epoch = self._written_step = None
        # The last step's gradients of an epoch not yet due: early stopping may make it the fit's last.
        self._gradients: tuple[int, dict[str, torch.Tensor]] | None = None

    def on_train_start(self, trainer, pl_module) -> None:
        # After a resumed checkpoint has been restored: a resumed fit starts at its epoch, and has its own first.
        self._first_epoch, self._written_step = trainer.current_epoch, trainer.global_step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self._last_batch = batch_idx == trainer.num_training_batches - 1

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        # Here, not at the epoch's end: Lightning frees the gradients before validation.
        writers = picture_writers(trainer)
        if not writers or self.every_n_epochs == 0 or not (self.gradients and self._last_batch):
            return
        step = trainer.global_step + 1  # logged at the step this gradient completes, like the weights below
        gradients = {name: p.grad for name, p in pl_module.named_parameters() if p.grad is not None}
        if self._due(trainer):
            self._write(writers, "gradients", gradients, step)
        else:
            self._gradients = step, {name: grad.detach().clone() for name, grad in gradients.items()}

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        writers = picture_writers(trainer)
        if writers and self._due(trainer):
            self._write_weights(writers, pl_module, trainer.global_step)

    def on_train_end(self, trainer, pl_module) -> None:
        # The fit's last epoch, whatever ended it (max_epochs, early stopping, max_steps), if not written yet.
        writers = picture_writers(trainer)
        if not writers or self.every_n_epochs == 0 or trainer.global_step == self._written_step:
            return
        if self._gradients is not None and self._gradients[0] == trainer.global_step:
            self._write(writers, "gradients", self._gradients[1], trainer.global_step)
        self._write_weights(writers, pl_module, trainer.global_step)

    def _due(self, trainer) -> bool:
        epoch = trainer.current_epoch
        first, last = epoch == self._first_epoch, epoch == (trainer.max_epochs or 0) - 1
        return self.every_n_epochs > 0 and (first or last or _every(self.every_n_epochs, epoch))

    def _write_weights(self, writers: list, pl_module, step: int) -> None:
        self._write(writers, "weights", {name: p.detach() for name, p in pl_module.named_parameters()}, step)
        self._written_step, self._gradients = step, None

    def _write(self, writers: list, kind: str, tensors: dict[str, torch.Tensor], step: int) -> None:
        histograms = {f"{kind}/{name}": tensor.float() for name, tensor in tensors.items()}
        for writer in writers:
            writer.histograms(histograms, step)
