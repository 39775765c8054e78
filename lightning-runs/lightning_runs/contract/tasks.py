"""Which task a batch and a model's outputs show, read from their types and shapes, never assumed: a classification
(integer class labels, (N, C) class scores) or a regression (one float target a sample, one value predicted a sample).
Anything else is neither: an autoencoder's batch of inputs alone, (N, C, H, W) outputs, a dict. The figures are drawn
by it (pictures/callbacks.py) and the seed study's baselines chosen by it (tools/seeds.py)."""

from typing import Literal

import torch

Task = Literal["classification", "regression"]


def inputs_and_targets(batch) -> tuple[torch.Tensor, torch.Tensor] | None:
    """A batch's first two entries when it is (inputs, targets, ...) of tensors with one row a sample, else None."""
    if not isinstance(batch, tuple | list) or len(batch) < 2:
        return None
    inputs, targets = batch[0], batch[1]
    if not (isinstance(inputs, torch.Tensor) and isinstance(targets, torch.Tensor)):
        return None
    if inputs.ndim == 0 or targets.ndim == 0 or len(inputs) != len(targets):
        return None
    return inputs, targets


def target_task(targets: torch.Tensor) -> Task | None:
    """(N,) integer labels: a classification; (N,) or (N, 1) floats: a regression; anything else neither."""
    if targets.is_floating_point():
        return "regression" if targets.ndim == 1 or targets.shape[1:] == (1,) else None
    integer = not targets.is_complex() and targets.dtype != torch.bool
    return "classification" if integer and targets.ndim == 1 else None


def output_task(outputs, batch) -> Task | None:
    """The task a step's `outputs` show for `batch`: (N, C) float scores, C > 1, for (N,) integer labels; or (N,) or
    (N, 1) float values for as many float targets."""
    pair = inputs_and_targets(batch)
    if pair is None or not isinstance(outputs, torch.Tensor) or not outputs.is_floating_point():
        return None
    count, task = len(pair[1]), target_task(pair[1])
    if task == "classification" and outputs.ndim == 2 and outputs.shape[0] == count and outputs.shape[1] > 1:
        return task
    if task == "regression" and outputs.shape in ((count,), (count, 1)):
        return task
    return None
