"""The LightningModule: loss, metrics per stage, and the optimizer with its schedule, around a plain network."""

import math
from collections.abc import Callable

import lightning as L
import torch
import torch.nn.functional as F
from jsonargparse.typing import ClosedUnitInterval, PositiveInt, restricted_number_type
from lightning.pytorch.utilities import AttributeDict
from matplotlib.figure import Figure
from torch import nn
from torchmetrics import MeanMetric, Metric
from torchmetrics.classification import MulticlassAccuracy, MulticlassConfusionMatrix

from project.data import NonNegativeFinite
from project.figures import Misclassified
from project.networks import DigitsCNN
from project.schedule import decay_groups, warmup_cosine

# Fraction of all optimizer steps spent warming up: [0, 1), so warmup can never outlast training.
STAGES = ("train", "val", "test")
WarmupFraction = restricted_number_type("WarmupFraction", float, [(">=", 0), ("<", 1)])
# Finite, unlike jsonargparse's PositiveFloat: an infinite rate is NaN weights at the first step, refused as the
# options are read instead (NonNegativeFinite likewise, for the decays).
LearningRate = restricted_number_type("LearningRate", float, [(">", 0), ("<", math.inf)])


class DigitsClassifier(L.LightningModule):
    hparams: AttributeDict  # Lightning types it `AttributeDict | MutableMapping`; save_hyperparameters makes the first
    metrics: dict[str, Metric]  # nn.ModuleDicts (below), which type each item as a Module
    confusion: dict[str, Metric]

    def __init__(
        self,
        # A factory, not an instance: the class count and the sample shape come from the data (linked in cli.py),
        # so a config swaps the network by class_path without repeating them.
        network: Callable[[int, tuple[int, ...]], nn.Module] = DigitsCNN,
        num_classes: PositiveInt = 10,
        input_shape: tuple[PositiveInt, ...] = (8, 8),
        lr: LearningRate = 1e-2,
        weight_decay: NonNegativeFinite = 0.05,
        warmup_fraction: WarmupFraction = 0.1,
        min_lr: NonNegativeFinite = 1e-5,
        # Validation errors 6 vs 11 without, in the recipe study (docs/results.md).
        label_smoothing: ClosedUnitInterval = 0.1,
        # torch's fused AdamW: the same update in one kernel for all parameters; torch picks it by default only for
        # CUDA tensors, and on the CPU its per-parameter loop was slower here (docs/performance.md).
        fused: bool = True,
    ) -> None:
        super().__init__()
        if min_lr > lr:  # the cosine would climb from lr to min_lr: a schedule nobody means
            raise ValueError(f"--model.min_lr {min_lr}: above --model.lr {lr}; the schedule decays from lr to min_lr")
        self.save_hyperparameters()
        # Plain ints in a list: loadable with weights_only (not jsonargparse's PositiveInt) and plain YAML in
        # hparams.yaml (a tuple is !!python/tuple).
        self.hparams.input_shape = [int(size) for size in input_shape]
        input_shape = tuple(input_shape)
        try:
            self.network = network(num_classes, input_shape)
        except TypeError as error:  # a network written for another signature: one line, not a traceback
            raise ValueError(
                "--model.network: its __init__ must take the class count and one sample's shape first,"
                f" (num_classes, input_shape, ...); {error}"
            ) from None
        # Train-split statistics, filled from the DataModule at fit start, one value per input element; buffers so
        # that a checkpoint alone turns raw inputs into the inputs the network was trained on.
        self.input_mean = nn.Buffer(torch.zeros(input_shape))
        self.input_std = nn.Buffer(torch.ones(input_shape))
        # Lightning's own attribute: a batch of two raw samples, for the model summary and for export.
        self.example_input_array = torch.zeros(2, *input_shape)
        # One metric object per stage; the loss is a per-sample mean over the whole split (and all ranks),
        # not a mean of batch means.
        self.metrics = nn.ModuleDict(  # ty: ignore[invalid-assignment]  # a ModuleDict: declared above
            {f"{stage}_acc": MulticlassAccuracy(num_classes, average="micro") for stage in STAGES}
        )
        self.metrics.update({f"{stage}_loss": MeanMetric() for stage in ("val", "test")})
        # What figures() draws (the library's Figures callback asks for them every N epochs): computed across ranks.
        self.confusion = nn.ModuleDict({stage: MulticlassConfusionMatrix(num_classes) for stage in ("val", "test")})  # ty: ignore[invalid-assignment]  # a ModuleDict: declared above
        self.misclassified = {stage: Misclassified() for stage in ("val", "test")}

    def setup(self, stage: str) -> None:
        # The data's train-split `mean` and `std`, broadcastable to one sample (docs/contract.md); a
        # DataModule without them leaves the inputs as they come.
        mean, std = (getattr(getattr(self.trainer, "datamodule", None), name, None) for name in ("mean", "std"))
        if stage == "fit" and mean is not None:
            self.input_mean.copy_(torch.as_tensor(mean).expand_as(self.input_mean))
            self.input_std.copy_(torch.as_tensor(std).expand_as(self.input_std))

    def forward(self, samples: torch.Tensor) -> torch.Tensor:
        # samples: (N, *input_shape) raw values -> (N, num_classes) logits
        return self.network((samples - self.input_mean) / self.input_std)

    def _step(self, batch: tuple[torch.Tensor, torch.Tensor], stage: str) -> torch.Tensor:
        samples, labels = batch
        logits = self(samples)
        self.metrics[f"{stage}_acc"].update(logits, labels)
        if stage == "train":
            loss = F.cross_entropy(logits, labels, label_smoothing=self.hparams.label_smoothing)
            self.log("train/loss", loss, prog_bar=True)
            return loss
        # Evaluated without label smoothing: a proper score, comparable across recipes.
        loss = F.cross_entropy(logits, labels)
        self.metrics[f"{stage}_loss"].update(loss, weight=len(labels))
        self.confusion[stage].update(logits, labels)
        self.misclassified[stage].update(samples, logits, labels)
        return loss

    # The metric objects are updated every batch but logged once per epoch: each `self.log` call costs Lightning
    # close to a millisecond of bookkeeping, about what a whole training step of this network costs.
    def on_train_epoch_end(self) -> None:
        self.log("train/acc", self.metrics["train_acc"])

    def on_validation_epoch_start(self) -> None:
        self.confusion["val"].reset()
        self.misclassified["val"].reset()

    def on_test_epoch_start(self) -> None:
        self.confusion["test"].reset()
        self.misclassified["test"].reset()

    def on_validation_epoch_end(self) -> None:
        self._log_evaluation("val")

    def on_test_epoch_end(self) -> None:
        self._log_evaluation("test")

    def _log_evaluation(self, stage: str) -> None:
        self.log(f"{stage}/acc", self.metrics[f"{stage}_acc"])
        self.log(f"{stage}/loss", self.metrics[f"{stage}_loss"], prog_bar=True)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._step(batch, "val")

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._step(batch, "test")

    def predict_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> dict[str, torch.Tensor]:
        # predictions.csv's columns: the most probable class and its probability, (N,) each.
        probability, label = self(batch[0]).softmax(dim=-1).max(dim=-1)
        return {"label": label, "probability": probability}

    def figures(self, stage: str) -> dict:
        """What the library's Figures callback logs as `<stage>/<name>`: the stage's confusion matrix, by torchmetrics'
        own plot, and its misclassified samples (the first 32 of the epoch)."""
        if stage not in self.confusion:
            return {}
        # torchmetrics' plot on a figure of its own size and fixed margins: pyplot's default figure with constrained
        # layout took twice as long to render (0.11 s against 0.06 s a drawing, docs/performance.md).
        figure = Figure(figsize=(5, 5), dpi=64)
        figure.subplots_adjust(left=0.16, bottom=0.16, right=0.98, top=0.98)
        self.confusion[stage].plot(ax=figure.add_subplot())
        drawn = {"confusion_matrix": figure}
        misclassified = self.misclassified[stage].figure()
        return drawn | ({"misclassified": misclassified} if misclassified is not None else {})

    def configure_optimizers(self):
        groups = decay_groups(self.network, self.hparams.weight_decay)
        optimizer = torch.optim.AdamW(groups, lr=self.hparams.lr, fused=self.hparams.fused)
        # Derived from epochs, batches, devices and gradient accumulation, so the curve always completes.
        total = int(self.trainer.estimated_stepping_batches)
        scheduler = warmup_cosine(optimizer, total, round(self.hparams.warmup_fraction * total), self.hparams.min_lr)
        # Logged by LearningRateMonitor as lr/decay and lr/no_decay.
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step", "name": "lr"}}
