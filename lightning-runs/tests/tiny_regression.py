"""The library's tiny regression: one float target a point, from a DataModule that takes no `seed` and has no class
count, monitored on val/loss, as a regression of the owner's would be (tiny_tasks.py holds the classification)."""

import math
from collections.abc import Sequence

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import Callback
from torch import nn

from lightning_runs.cli import RunsCLI, set_part_defaults
from tiny_tasks import TRAINER_DEFAULTS, TinySplits, three_splits


class TinyRegressionDataModule(TinySplits):
    """`n` points of `features` values, each with one float target: a fixed linear function of it plus a little
    noise. The same points every run: it takes no `seed`."""

    sample_kind = "table"

    def __init__(self, n: int = 256, features: int = 4, batch_size: int = 32) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.sample_shape = (features,)

    def setup(self, stage: str) -> None:
        if self.splits is not None:
            return
        generator = torch.Generator().manual_seed(0)
        points = torch.randn(self.hparams.n, self.hparams.features, generator=generator)
        targets = points @ torch.randn(self.hparams.features, generator=generator)  # (n,)
        targets += 0.1 * torch.randn(self.hparams.n, generator=generator)
        self.splits = three_splits(points, targets)


class TinyRegressor(L.LightningModule):
    def __init__(self, input_shape: tuple[int, ...] = (4,), lr: float = 0.05) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.hparams.input_shape = [int(size) for size in input_shape]
        self.layer = nn.Linear(math.prod(input_shape), 1)
        self.example_input_array = torch.zeros(2, *input_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x.flatten(1)).squeeze(-1)  # (N, *input_shape) -> (N,) values

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        return F.mse_loss(self(batch[0]), batch[1])

    def _evaluate(self, batch, stage: str) -> torch.Tensor:
        predicted = self(batch[0])
        self.log(f"{stage}/loss", F.mse_loss(predicted, batch[1]), on_epoch=True)
        return predicted  # (N,): the library draws it against the targets

    def validation_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self._evaluate(batch, "val")

    def test_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self._evaluate(batch, "test")

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class RegressionCLI(RunsCLI):
    def add_arguments_to_parser(self, parser) -> None:
        super().add_arguments_to_parser(parser)
        set_part_defaults(parser, "early_stopping", monitor="val/loss", patience=100)
        set_part_defaults(parser, "best_checkpoint", monitor="val/loss", mode="min")


def regression_cli_main(args: list[str] | None = None, callbacks: Sequence[Callback] = ()) -> RegressionCLI:
    return RegressionCLI(
        TinyRegressor,
        TinyRegressionDataModule,
        trainer_defaults=TRAINER_DEFAULTS,
        callbacks=callbacks,
        args=args,
        name="tiny_regression",
    )
