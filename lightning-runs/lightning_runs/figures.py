"""Pictures of a run: the input samples, the misclassified ones, confusion matrices and weight histograms, for each
logger that shows them (pictures.py). What the samples look like is drawings.py's; which kind they are, the
DataModule's `sample_kind` (contract.py)."""

import torch
from jsonargparse.typing import NonNegativeInt, PositiveInt
from lightning.pytorch.callbacks import Callback
from matplotlib.figure import Figure
from torchmetrics.classification import MulticlassConfusionMatrix

from lightning_runs.console import say
from lightning_runs.contract import sample_kind
from lightning_runs.distributed import gather_rows
from lightning_runs.drawings import COLUMNS, MISCLASSIFIED, drawable, image_grid, signal_plots
from lightning_runs.limits import MAX_FIGURE_CLASSES
from lightning_runs.pictures import picture_writers

MAX_ANNOTATED = 20  # classes: a confusion matrix with more gets no count in each cell (100x100 texts take seconds)


def _every(n: int, epoch: int) -> bool:
    return n > 0 and (epoch + 1) % n == 0


class Figures(Callback):
    """`train/inputs` once; `val/misclassified` and `val/confusion_matrix` every N epochs and at the end of fit;
    `test/misclassified` and `test/confusion_matrix` after test.

    Confusion matrices for every kind of sample; inputs and misclassified samples for images and signals only.
    The validation and test steps return their (N, C) logits to reach `on_*_batch_end`; the first batch of a stage
    decides whether it gets figures and its class count C. Every rank counts its shard of the confusion matrix and
    torchmetrics sums them; the misclassified samples are gathered from every rank. Only rank zero draws and
    writes. `every_n_epochs: 0` turns all of it off.
    """

    # Every 20 epochs: about 0.2 s a time (two matplotlib figures), under 3% of the default 100-epoch fit.
    def __init__(self, every_n_epochs: NonNegativeInt = 20, max_images: PositiveInt = 32) -> None:
        self.every_n_epochs, self.max_images = every_n_epochs, max_images
        self.matrices: dict[str, torch.Tensor] = {}  # the latest (C, C) matrix of each stage, on every rank
        self._pending = None  # rank zero: the last validation's pictures, when not written yet

    def setup(self, trainer, pl_module, stage: str) -> None:
        self.kind = sample_kind(trainer.datamodule)  # None without a DataModule: no sample pictures
        # Per stage, from its first batch: its metric (None: no figures) and class count, and an empty (samples,
        # labels, predictions) where its samples are drawn. Every rank sees the same shapes, so every rank decides
        # alike: compute() and gather_rows are collective.
        self._confusion: dict[str, MulticlassConfusionMatrix | None] = {}
        self._skipped: set[str] = set()  # stages whose confusion matrix has too many classes to draw: said once
        self._classes: dict[str, int] = {}
        self._empty: dict[str, tuple[torch.Tensor, ...]] = {}
        self._wrong = {s: [] for s in ("val", "test")}  # per batch: (samples, labels, predictions) misclassified

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        writers = picture_writers(trainer)
        if not writers or self.every_n_epochs == 0 or trainer.global_step != 0 or batch_idx != 0:
            return  # once per run: a resumed run already has it
        samples = batch[0] if isinstance(batch, tuple | list) and batch else None
        if not drawable(self.kind, samples):
            return
        for writer in writers:
            if self.kind == "image":
                writer.images({"train/inputs": image_grid(samples[: self.max_images])}, 0)  # (3, H, W)
            else:
                writer.figures({"train/inputs": signal_plots(samples[:COLUMNS], title="train inputs")}, 0)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        if not trainer.sanity_checking:
            self._collect("val", trainer, outputs, batch)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self._collect("test", trainer, outputs, batch)

    def _collect(self, stage: str, trainer, outputs, batch) -> None:
        if self.every_n_epochs == 0:
            return
        logits, labels = _logits(outputs, batch)
        if stage not in self._confusion:
            self._start(stage, trainer, logits, labels, batch[0] if logits is not None else None)
        confusion = self._confusion[stage]
        if confusion is None or logits is None or logits.shape[1] != self._classes[stage]:
            return
        predictions = logits.argmax(dim=-1)  # (N,)
        confusion.update(predictions, labels)
        room = self.max_images - sum(len(w[1]) for w in self._wrong[stage])
        empty = self._empty.get(stage)
        # Once full, no more boolean indexing (a GPU sync) for the rest of the epoch; samples of another shape than
        # the first batch's (signals padded per batch) are not drawn: they would not join the others.
        if empty is not None and room > 0 and batch[0].shape[1:] == empty[0].shape[1:]:
            wrong = predictions != labels
            self._wrong[stage].append((batch[0][wrong][:room], labels[wrong][:room], predictions[wrong][:room]))

    def _start(self, stage: str, trainer, logits, labels, samples) -> None:
        """The stage's first batch: its class count is the width of the logits; no logits, no figures."""
        if logits is None:
            self._confusion[stage] = None
            return
        device, self._classes[stage] = trainer.strategy.root_device, logits.shape[1]
        self._confusion[stage] = MulticlassConfusionMatrix(logits.shape[1], validate_args=False).to(device)
        if drawable(self.kind, samples) and len(samples) == len(labels):
            none = samples.new_zeros(0, *samples.shape[1:]), labels.new_zeros(0), labels.new_zeros(0, dtype=torch.long)
            self._empty[stage] = none  # predictions as argmax makes them: every rank's must match for the gather

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or self.every_n_epochs == 0:
            if self._confusion.get("val") is not None:
                self._confusion["val"].reset()
            self._wrong["val"].clear()
            return
        pictures = self._finish("val", trainer)  # collective: every rank, every epoch
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
            self._write(trainer, "test", self._finish("test", trainer))

    def _finish(self, stage: str, trainer) -> tuple | None:
        """The stage's confusion matrix over all ranks and up to `max_images` misclassified samples of all ranks."""
        confusion = self._confusion.get(stage)
        if confusion is None:
            return None
        matrix = self.matrices[stage] = confusion.compute()  # (C, C): sums every rank's counts
        confusion.reset()
        wrong, self._wrong[stage] = self._wrong[stage], []
        samples = labels = predictions = None
        if stage in self._empty:
            parts = zip(*(wrong or [self._empty[stage]]), strict=True)
            mine = [torch.cat(part) for part in parts]  # this rank's (M, ...), M <= max_images
            samples, labels, predictions = (torch.cat(gather_rows(t))[: self.max_images] for t in mine)  # all ranks'
        if not trainer.is_global_zero:
            return None
        wrong = None if samples is None else (samples.cpu(), labels.cpu(), predictions.cpu())
        return matrix.cpu(), wrong, trainer.global_step

    def _write(self, trainer, stage: str, drawn: tuple | None) -> None:
        writers = picture_writers(trainer)
        if not writers or drawn is None:
            return
        matrix, wrong, step = drawn
        figures = {}
        if len(matrix) <= MAX_FIGURE_CLASSES:
            figure = Figure(figsize=(5, 4.5), dpi=64)  # ~27 KB a PNG; constrained layout would add 50 ms a figure
            ax = figure.subplots()
            self._confusion[stage].plot(val=matrix, ax=ax, add_text=len(matrix) <= MAX_ANNOTATED)
            ax.set_title(f"{stage}: {int(matrix.sum())} samples, {int(matrix.trace())} right (step {step})")
            figures[f"{stage}/confusion_matrix"] = figure
        elif stage not in self._skipped:
            self._skipped.add(stage)
            say(
                f"{stage}/confusion_matrix: {len(matrix)} classes, more than the {MAX_FIGURE_CLASSES} a figure shows"
                " (lightning_runs/limits.py); not drawn"
            )
        if wrong is not None:
            figures[f"{stage}/misclassified"] = MISCLASSIFIED[self.kind](*wrong)
        for writer in writers if figures else ():
            writer.figures(figures, step)


def _logits(outputs, batch) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The step's (N, C) logits and the batch's (N,) class labels, or (None, None) where the step returned anything
    else (a loss, a dict, one value a sample) or the batch has no integer labels second."""
    labels = batch[1] if isinstance(batch, tuple | list) and len(batch) > 1 else None
    if not (isinstance(outputs, torch.Tensor) and isinstance(labels, torch.Tensor)):
        return None, None
    if outputs.ndim != 2 or outputs.shape[1] < 2 or labels.shape != outputs.shape[:1] or labels.is_floating_point():
        return None, None
    return outputs, labels


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
