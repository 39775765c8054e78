"""Pictures of a run, for each logger that shows them (writers.py): the input samples once, each evaluation's figures
by the task its outputs show (tasks.py): a classification's confusion matrix and misclassified samples
(classification.py, the samples drawn by samples.py), a regression's predicted-against-true and residual plots
(regression.py); and weight histograms. Which kind the samples are is the DataModule's `sample_kind`
(contract/parts.py)."""

import torch
from jsonargparse.typing import NonNegativeInt, PositiveInt
from lightning.pytorch.callbacks import Callback

from lightning_runs.console import say
from lightning_runs.contract.parts import sample_kind
from lightning_runs.contract.tasks import inputs_and_targets, output_task
from lightning_runs.distributed import this_ranks_part
from lightning_runs.pictures.classification import ClassFigures
from lightning_runs.pictures.regression import RegressionFigures
from lightning_runs.pictures.samples import COLUMNS, drawable, image_grid, signal_plots
from lightning_runs.pictures.writers import picture_writers


def _every(n: int, epoch: int) -> bool:
    return n > 0 and (epoch + 1) % n == 0


def _says_nothing(outputs) -> bool:
    """A step that returns nothing, or only its loss, as Lightning's docs write validation and test steps."""
    return outputs is None or (isinstance(outputs, torch.Tensor) and outputs.ndim == 0)


class Figures(Callback):
    """`train/inputs` once; each stage's figures every N epochs of a fit and at its end, after validate and after test:
    `val/...` and `test/...`, `confusion_matrix` and `misclassified` for a classification, `predicted_vs_true` and
    `residuals` for a regression, none for any other task (said in one line).

    The first batch of a stage decides its task, from what the step returns and the batch holds: (N, C) class scores
    for (N,) integer labels, or (N,) or (N, 1) values for as many float targets. A step that returns nothing or its
    loss has the module called on the batch's inputs instead, under no_grad, in the epochs whose figures are drawn
    only (validation of the other epochs is not slowed). Every rank sees the same shapes, so every rank decides alike:
    the gathers at the end of a stage are collective. Only rank zero draws and writes. `every_n_epochs: 0` turns all of
    it off.
    """

    # Every 20 epochs: about 0.2 s a time (two matplotlib figures), under 3% of the default 100-epoch fit.
    def __init__(self, every_n_epochs: NonNegativeInt = 20, max_images: PositiveInt = 32) -> None:
        self.every_n_epochs, self.max_images = every_n_epochs, max_images
        self.matrices: dict[str, torch.Tensor] = {}  # the latest (C, C) matrix of each classification stage, every rank
        self._pending = None  # rank zero: the last validation's pictures, when not written yet
        self._said = False  # why a stage has no figures: one line a run

    def setup(self, trainer, pl_module, stage: str) -> None:
        self.kind = sample_kind(trainer.datamodule)  # None without a DataModule: no sample pictures
        # Per stage, from its first batch: what gathers its figures (None: no figures).
        self._figures: dict[str, ClassFigures | RegressionFigures | None] = {}
        self._called: set[str] = set()  # stages whose outputs come from calling the module on the batch's inputs

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
            self._collect("val", trainer, pl_module, outputs, batch)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self._collect("test", trainer, pl_module, outputs, batch)

    def _collect(self, stage: str, trainer, pl_module, outputs, batch) -> None:
        if self.every_n_epochs == 0 or (stage in self._figures and self._figures[stage] is None):
            return
        if _says_nothing(outputs):
            self._called.add(stage)
            if not self._drawn_now(trainer):
                return
            outputs = self._called_outputs(stage, pl_module, batch)
            if outputs is None:
                return
        if stage not in self._figures:
            self._figures[stage] = self._start(stage, trainer, outputs, batch)
        if self._figures[stage] is not None:
            self._figures[stage].update(outputs, batch)

    def _drawn_now(self, trainer) -> bool:
        """Whether this epoch's figures are drawn: every validate and test; in a fit every N epochs and the last of
        `max_epochs` (one an early stop ends is not known in advance)."""
        if trainer.state.fn != "fit":
            return True
        epoch = trainer.current_epoch
        return _every(self.every_n_epochs, epoch) or epoch == (trainer.max_epochs or 0) - 1

    def _called_outputs(self, stage: str, pl_module, batch) -> torch.Tensor | None:
        """The module's outputs for the batch's inputs, or None where the batch has no targets or the call fails."""
        pair = inputs_and_targets(batch)
        if pair is None:
            self._none(stage, "its batches are not (inputs, targets, ...) tensors")
            return None
        try:
            with torch.no_grad():  # validation and test already run without gradients; a direct call may not
                return pl_module(pair[0])
        # Any module's own error: the figures are not worth a run. Same module, same shapes: every rank raises alike.
        except Exception as error:
            first = (str(error).splitlines() or [""])[0]
            self._none(stage, f"calling the module on a batch's inputs raised {type(error).__name__}: {first}")
            return None

    def _start(self, stage: str, trainer, outputs, batch) -> ClassFigures | RegressionFigures | None:
        task, device = output_task(outputs, batch), trainer.strategy.root_device
        if task == "classification":
            return ClassFigures(self.kind, self.max_images, device, outputs, batch[0], batch[1])
        if task == "regression":
            return RegressionFigures(device, trainer.world_size)
        self._none(
            stage,
            "its outputs are neither (N, C) class scores for integer labels nor one value a sample for"
            " float targets (python -m pydoc lightning_runs.contract.parts)",
        )
        return None

    def _none(self, stage: str, why: str) -> None:
        self._figures[stage] = None
        if not self._said:
            self._said = True
            say(f"figures: none for {stage}: {why}")

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        figures = self._figures.get("val")
        skipped = "val" in self._called and not self._drawn_now(trainer)  # nothing collected: nothing to gather
        if trainer.sanity_checking or self.every_n_epochs == 0 or skipped:
            if figures is not None:
                figures.reset()
            return
        pictures = self._finish("val", trainer)  # collective: every rank, every epoch it collected
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
        figures = self._figures.get(stage)
        if figures is None:
            return None
        drawn = figures.finish(trainer)
        if isinstance(figures, ClassFigures):
            self.matrices[stage] = figures.matrix
        return None if drawn is None else (drawn, trainer.global_step)

    def _write(self, trainer, stage: str, pictures: tuple | None) -> None:
        writers = picture_writers(trainer)
        if not writers or pictures is None:
            return
        drawn, step = pictures
        figures = self._figures[stage].figures(stage, drawn, step)
        for writer in writers if figures else ():
            writer.figures(figures, step)


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
        # Sharded (FSDP): rank zero's shard of each, the only part this rank may read without the others.
        histograms = {f"{kind}/{name}": this_ranks_part(tensor).float() for name, tensor in tensors.items()}
        for writer in writers:
            writer.histograms(histograms, step)
