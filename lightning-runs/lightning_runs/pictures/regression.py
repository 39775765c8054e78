"""A regression's figures of one stage: the predicted values against the true ones (with the line y = x) and the
residuals (true - predicted) against the predicted values. The errors are summed over every sample of every rank;
the points drawn are the first of each rank's share, up to MAX_POINTS in all. callbacks.py says when."""

import math

import torch
from matplotlib.figure import Figure

from lightning_runs.contract.tasks import output_task
from lightning_runs.distributed import gather_rows

# Points drawn a figure, over all ranks: a scatter of 5,000 drew and encoded in ~40 ms here (20,000: 0.18 s, 100,000:
# 0.7 s a figure, two figures a stage), and more only overplot the same cloud. The first of each rank's batches.
MAX_POINTS = 5_000


class RegressionFigures:
    """`<stage>/predicted_vs_true` and `<stage>/residuals`, from the stage's (N,) or (N, 1) predicted values."""

    def __init__(self, device, world_size: int) -> None:
        self.device, self.room = device, math.ceil(MAX_POINTS / world_size)  # each rank's share of the points
        self.reset()

    def reset(self) -> None:
        self._points: list[tuple[torch.Tensor, torch.Tensor]] = []  # per batch: (predicted, true), each (M,)
        self._kept = self._count = 0  # points kept; samples seen
        self._errors = torch.zeros(2, device=self.device)  # squared and absolute error, summed over every sample

    def update(self, predicted, batch) -> None:
        if output_task(predicted, batch) != "regression":
            return
        # float32: bf16 outputs under mixed precision gather and draw as any other
        predicted, true = (t.detach().flatten().float().to(self.device) for t in (predicted, batch[1]))
        error = true - predicted
        self._count += len(error)
        self._errors += torch.stack([error.square().sum(), error.abs().sum()])
        room = self.room - self._kept
        if room > 0:
            self._points.append((predicted[:room], true[:room]))
            self._kept += min(room, len(predicted))

    def finish(self, trainer) -> tuple | None:
        """Every rank's points and error totals, on rank zero (None elsewhere). Collective: every rank calls it."""
        empty = torch.zeros(0, device=self.device)
        mine = [torch.cat([part[i] for part in self._points] or [empty]) for i in (0, 1)]  # (M,) predicted, true
        predicted, true = (torch.cat(gather_rows(t)) for t in mine)
        count = torch.cat(gather_rows(torch.tensor([self._count], device=self.device))).sum().item()
        errors = torch.cat(gather_rows(self._errors[None])).sum(dim=0) / max(count, 1)  # (2,): mean squared, absolute
        self.reset()
        if not trainer.is_global_zero:
            return None
        return predicted.cpu(), true.cpu(), count, errors.tolist()

    def figures(self, stage: str, drawn: tuple, step: int) -> dict[str, Figure]:
        predicted, true, count, (squared, absolute) = drawn
        shown = f", {len(true)} drawn" if len(true) < count else ""
        title = f"{stage}: {count} samples (step {step}{shown})\nRMSE {math.sqrt(squared):.4g}, MAE {absolute:.4g}"
        return {
            f"{stage}/predicted_vs_true": predicted_vs_true(predicted, true, title),
            f"{stage}/residuals": residuals(predicted, true, title),
        }


def predicted_vs_true(predicted: torch.Tensor, true: torch.Tensor, title: str) -> Figure:
    """Each sample a point (true, predicted); a perfect model's points lie on the line y = x."""
    figure, ax = _axes(title)
    ax.scatter(true.numpy(), predicted.numpy(), s=6, alpha=0.5, linewidths=0)
    values = torch.cat([predicted, true])
    values = values[values.isfinite()]
    if len(values):  # the diagonal across both ranges: points above it are over-predicted
        low, high = values.min().item(), values.max().item()
        ax.plot([low, high], [low, high], color="C1", linewidth=1, label="y = x")
        ax.legend(loc="upper left")
    ax.set_xlabel("true")
    ax.set_ylabel("predicted")
    return figure


def residuals(predicted: torch.Tensor, true: torch.Tensor, title: str) -> Figure:
    """Each sample a point (predicted, true - predicted): a trend or a funnel around 0 is an error the model makes
    systematically."""
    figure, ax = _axes(title)
    ax.scatter(predicted.numpy(), (true - predicted).numpy(), s=6, alpha=0.5, linewidths=0)
    ax.axhline(0, color="C1", linewidth=1)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true - predicted")
    return figure


def _axes(title: str):
    figure = Figure(figsize=(5, 4.5), dpi=64)  # as the confusion matrix: ~17 KB a PNG
    figure.subplots_adjust(left=0.17, top=0.86)  # room for the y label's ticks and the two-line title
    ax = figure.subplots()
    ax.set_title(title, fontsize=10)
    return figure, ax
