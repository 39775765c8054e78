"""A tiny task written as carefully as a project's own (the template's DigitsClassifier is): for the tests of what the
library says about bad input, and of numbers that must not change with the number of processes.

- `TypedClassifier`: restricted numbers (refused at parse time), a check across two arguments (in `__init__`), a
  network given as a factory with arguments of its own (`Dropout`), a warmup-cosine schedule whose length the trainer
  derives, and an evaluation loss over every point of every rank (a weighted MeanMetric), so that a DDP evaluation
  scores exactly as one process does;
- `TypedPoints`: TinyDataModule with a batch size that must be positive.
"""

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from jsonargparse.typing import ClosedUnitInterval, NonNegativeFloat, PositiveFloat, PositiveInt, restricted_number_type
from torch import nn
from torchmetrics import MeanMetric

from tiny_tasks import TinyClassifier, TinyDataModule

WarmupFraction = restricted_number_type("WarmupFraction", float, [(">=", 0), ("<", 1)])  # warmup never outlasts a fit


class Dropout(nn.Module):
    """A network factory's product: dropout, then one Linear layer."""

    def __init__(self, num_classes: int, input_shape: tuple[int, ...], dropout: float = 0.1) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Flatten(), nn.Dropout(dropout), nn.Linear(math.prod(input_shape), num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)  # (N, *input_shape) -> (N, num_classes)


class TypedClassifier(TinyClassifier):
    def __init__(
        self,
        network: Callable[[int, tuple[int, ...]], nn.Module] = Dropout,
        num_classes: PositiveInt = 3,
        input_shape: tuple[PositiveInt, ...] = (4,),
        lr: PositiveFloat = 0.05,
        label_smoothing: ClosedUnitInterval = 0.0,
        warmup_fraction: WarmupFraction = 0.1,
        min_lr: NonNegativeFloat = 1e-5,
    ) -> None:
        if min_lr > lr:  # a check no single argument's type can make
            raise ValueError(f"--model.min_lr {min_lr}: above --model.lr {lr}; the schedule decays from lr to min_lr")
        super().__init__(int(num_classes), tuple(input_shape), float(lr))
        del self.layer
        self.network = network(int(num_classes), tuple(int(size) for size in input_shape))
        self.losses = nn.ModuleDict({stage: MeanMetric() for stage in ("val", "test")})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        samples, labels = batch
        loss = F.cross_entropy(self(samples), labels, label_smoothing=self.hparams.label_smoothing)
        self.log("train/loss", loss)
        return loss

    def _evaluate(self, batch, stage: str) -> torch.Tensor:
        samples, labels = batch
        logits = self(samples)
        self.accuracy[stage].update(logits, labels)
        # Weighted by the batch's points: the mean over the split, whatever the batches and the ranks' shards.
        self.losses[stage].update(F.cross_entropy(logits, labels), weight=len(labels))
        self.log(f"{stage}/loss", self.losses[stage], on_epoch=True)
        self.log(f"{stage}/acc", self.accuracy[stage], on_epoch=True)
        return logits.detach()

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        total = int(self.trainer.estimated_stepping_batches)  # follows epochs, batches and the number of processes
        warmup = max(1, min(round(self.hparams.warmup_fraction * total), total - 1))
        schedules = torch.optim.lr_scheduler
        rise = schedules.LinearLR(optimizer, start_factor=0.01, total_iters=warmup)
        fall = schedules.CosineAnnealingLR(optimizer, T_max=max(1, total - warmup), eta_min=self.hparams.min_lr)
        schedule = schedules.SequentialLR(optimizer, [rise, fall], milestones=[warmup])  # ends at min_lr exactly
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step", "name": "lr"}}


class TypedPoints(TinyDataModule):
    def __init__(
        self,
        n: PositiveInt = 256,
        features: PositiveInt = 4,
        num_classes: PositiveInt = 3,
        batch_size: PositiveInt = 32,
        seed: int = 0,
        folds: int | None = None,
        fold: int = 0,
    ) -> None:
        super().__init__(n, features, num_classes, batch_size, seed, folds, fold)
