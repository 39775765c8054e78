"""Pictures in TensorBoard: the input digits, the misclassified ones, confusion matrices and weight histograms."""

import math

import torch
import torch.nn.functional as F
from jsonargparse.typing import NonNegativeInt, PositiveInt
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from matplotlib.figure import Figure
from torchmetrics.classification import MulticlassConfusionMatrix
from torchvision.utils import make_grid

from project.core.distributed import gather_rows

UPSCALE = 4  # 8x8 digits are specks in TensorBoard; nearest-neighbour upscaling keeps their pixels sharp
# numpy's bin estimator: ~1.4 KB for a conv kernel's histogram instead of ~9 KB with torch's default bins
BINS = "auto"


def tensorboard(trainer) -> TensorBoardLogger | None:
    """The run's TensorBoardLogger on rank zero, else None (other ranks, fast_dev_run, or another logger)."""
    if not trainer.is_global_zero:
        return None
    return next((logger for logger in trainer.loggers if isinstance(logger, TensorBoardLogger)), None)


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
        logger = tensorboard(trainer)
        if logger is None or self.every_n_epochs == 0 or trainer.global_step != 0 or batch_idx != 0:
            return  # once per run: a resumed run already has it
        images = _as_nchw(batch[0][: self.max_images])  # (N, 1, 8, 8)
        grid = make_grid(images.float().cpu(), nrow=8, padding=1, normalize=True, pad_value=0.5)  # (3, H, W)
        logger.experiment.add_image("train/inputs", F.interpolate(grid[None], scale_factor=UPSCALE)[0], 0)

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

    def _write(self, trainer, stage: str, pictures: tuple | None) -> None:
        logger = tensorboard(trainer)
        if logger is None or pictures is None:
            return
        writer, (matrix, images, labels, predictions, step) = logger.experiment, pictures
        figure = Figure(figsize=(5, 4.5), dpi=64)  # ~27 KB a PNG; constrained layout would add 50 ms a figure
        ax = figure.subplots()
        self._confusion[stage].plot(val=matrix, ax=ax)
        ax.set_title(f"{stage}: {int(matrix.sum())} digits, {int(matrix.trace())} right (step {step})")
        writer.add_figure(f"{stage}/confusion_matrix", figure, step)
        writer.add_figure(f"{stage}/misclassified", _misclassified_figure(images, labels, predictions), step)


def _as_nchw(images: torch.Tensor) -> torch.Tensor:
    return images.unsqueeze(1) if images.ndim == 3 else images  # (N, H, W) -> (N, 1, H, W)


def _gather(trainer, size: int, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Every rank's misclassified digits, the first `size` of them."""
    gathered = []
    for tensor in tensors:
        rows, counts = gather_rows(trainer, tensor)  # (W, R_max, ...)
        gathered.append(torch.cat([rows[r, :n] for r, n in enumerate(counts.tolist())])[:size])
    return tuple(gathered)


def _misclassified_figure(images: torch.Tensor, labels: torch.Tensor, predictions: torch.Tensor) -> Figure:
    """Up to 8 digits a row in one image, each captioned `true→predicted`.

    One axes with one image and a caption per digit: a subplot per digit took matplotlib 0.3 s a figure.
    """
    columns, cell = 8, 12  # an 8x8 digit in a 12x12 cell: room for its caption above it
    rows = max(1, math.ceil(len(labels) / columns))
    figure = Figure(figsize=(columns, 1.1 * rows + 0.4), dpi=60)
    figure.suptitle("true → predicted class")
    ax = figure.add_axes((0, 0, 1, 1.1 * rows / (1.1 * rows + 0.4)))
    ax.set_axis_off()
    if len(labels) == 0:
        ax.text(0.5, 0.5, "no misclassified digits", fontsize=12, ha="center", transform=ax.transAxes)
        return figure
    digits = _as_nchw(images).float().mean(dim=1, keepdim=True)  # (M, 1, 8, 8), channels averaged
    digits = F.pad(digits / digits.amax().clamp(min=1e-6), (2, 2, 4, 0))  # (M, 1, 12, 12): caption room on top
    grid = make_grid(digits, nrow=columns, padding=0)[0]  # (rows * 12, columns * 12)
    ax.imshow(grid.numpy(), cmap="gray_r", vmin=0, vmax=1, extent=(0, columns * cell, rows * cell, 0))
    ax.set_xlim(0, columns * cell)
    for i, (label, prediction) in enumerate(zip(labels.tolist(), predictions.tolist(), strict=True)):
        row, column = divmod(i, columns)
        ax.text(column * cell + cell / 2, row * cell + 2, f"{label}→{prediction}", fontsize=12, ha="center")
    return figure


class Histograms(Callback):
    """`weights/<parameter>` after every N epochs, and with `gradients` also `gradients/<parameter>` of the
    epoch's last step (before clipping). Never per step: each histogram costs about a millisecond and 1-2 KB.
    """

    def __init__(self, every_n_epochs: NonNegativeInt = 10, gradients: bool = False) -> None:
        self.every_n_epochs, self.gradients = every_n_epochs, gradients
        self._last_batch = False

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self._last_batch = batch_idx == trainer.num_training_batches - 1

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        # Here, not at the epoch's end: Lightning frees the gradients before validation.
        logger = tensorboard(trainer)
        if logger is None or not (self.gradients and self._last_batch and self._due(trainer)):
            return
        writer = logger.experiment
        for name, param in pl_module.named_parameters():
            if param.grad is not None:  # logged at the step this gradient completes, like the weights below
                writer.add_histogram(f"gradients/{name}", param.grad.float(), trainer.global_step + 1, bins=BINS)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        logger = tensorboard(trainer)
        if logger is None or not self._due(trainer):
            return
        writer = logger.experiment
        for name, param in pl_module.named_parameters():
            writer.add_histogram(f"weights/{name}", param.detach().float(), trainer.global_step, bins=BINS)

    def _due(self, trainer) -> bool:
        return _every(self.every_n_epochs, trainer.current_epoch)
