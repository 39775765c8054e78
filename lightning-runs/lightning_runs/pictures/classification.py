"""A classification's figures of one stage: its confusion matrix and its misclassified samples (drawn by their kind,
samples.py). Every rank counts its shard of the matrix and torchmetrics sums them; up to `max_images` misclassified
samples are gathered from every rank. callbacks.py says when."""

import torch
from matplotlib.figure import Figure
from torchmetrics.classification import MulticlassConfusionMatrix

from lightning_runs.console import say
from lightning_runs.contract.tasks import output_task
from lightning_runs.distributed import gather_rows
from lightning_runs.limits import MAX_FIGURE_CLASSES
from lightning_runs.pictures.samples import MISCLASSIFIED, drawable

MAX_ANNOTATED = 20  # classes: a confusion matrix with more gets no count in each cell (100x100 texts take seconds)


class ClassFigures:
    """`<stage>/confusion_matrix` and, for images and signals, `<stage>/misclassified`, from the stage's (N, C) class
    scores; the first batch's C is the class count, and batches of another width are left out."""

    def __init__(self, kind: str | None, max_images: int, device, scores: torch.Tensor, samples, labels) -> None:
        self.kind, self.max_images, self.classes = kind, max_images, scores.shape[1]
        self.confusion = MulticlassConfusionMatrix(self.classes, validate_args=False).to(device)
        self.matrix: torch.Tensor | None = None  # the latest (C, C) matrix, on every rank
        self._wrong: list[tuple[torch.Tensor, ...]] = []  # per batch: (samples, labels, predictions) misclassified
        self._empty = None  # an empty (samples, labels, predictions) where samples are drawn: every rank gathers alike
        self._skipped = False  # too many classes to draw: said once
        if drawable(kind, samples) and len(samples) == len(labels):
            # predictions as argmax makes them: every rank's must match for the gather
            self._empty = samples.new_zeros(0, *samples.shape[1:]), labels.new_zeros(0), labels.new_zeros(0).long()

    def update(self, scores, batch) -> None:
        if output_task(scores, batch) != "classification" or scores.shape[1] != self.classes:
            return
        samples, labels = batch[0], batch[1]
        predictions = scores.argmax(dim=-1)  # (N,)
        self.confusion.update(predictions, labels)
        room = self.max_images - sum(len(w[1]) for w in self._wrong)
        # Once full, no more boolean indexing (a GPU sync) for the rest of the epoch; samples of another shape than
        # the first batch's (signals padded per batch) are not drawn: they would not join the others.
        if self._empty is not None and room > 0 and samples.shape[1:] == self._empty[0].shape[1:]:
            wrong = predictions != labels
            self._wrong.append((samples[wrong][:room], labels[wrong][:room], predictions[wrong][:room]))

    def reset(self) -> None:
        self.confusion.reset()
        self._wrong.clear()

    def finish(self, trainer) -> tuple | None:
        """The matrix over all ranks and up to `max_images` misclassified samples of all ranks, on rank zero (None
        elsewhere). Collective: every rank calls it."""
        self.matrix = self.confusion.compute()  # (C, C): sums every rank's counts
        wrong = None
        if self._empty is not None:
            parts = zip(*(self._wrong or [self._empty]), strict=True)
            mine = [torch.cat(part) for part in parts]  # this rank's (M, ...), M <= max_images
            wrong = [torch.cat(gather_rows(t))[: self.max_images] for t in mine]  # all ranks'
        self.reset()
        if not trainer.is_global_zero:
            return None
        return self.matrix.cpu(), None if wrong is None else [t.cpu() for t in wrong]

    def figures(self, stage: str, drawn: tuple, step: int) -> dict[str, Figure]:
        matrix, wrong = drawn
        figures = {}
        if len(matrix) <= MAX_FIGURE_CLASSES:
            figure = Figure(figsize=(5, 4.5), dpi=64)  # ~27 KB a PNG; constrained layout would add 50 ms a figure
            ax = figure.subplots()
            self.confusion.plot(val=matrix, ax=ax, add_text=len(matrix) <= MAX_ANNOTATED)
            ax.set_title(f"{stage}: {int(matrix.sum())} samples, {int(matrix.trace())} right (step {step})")
            figures[f"{stage}/confusion_matrix"] = figure
        elif not self._skipped:
            self._skipped = True
            say(
                f"{stage}/confusion_matrix: {len(matrix)} classes, more than the {MAX_FIGURE_CLASSES} a figure shows"
                " (lightning_runs/limits.py); not drawn"
            )
        if wrong is not None:
            figures[f"{stage}/misclassified"] = MISCLASSIFIED[self.kind](*wrong)
        return figures
