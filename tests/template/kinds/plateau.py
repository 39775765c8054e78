"""A regression (N, F) -> (N,) whose learning rate falls when val_loss stops falling: ReduceLROnPlateau, named with
its monitor in configure_optimizers' lr_scheduler dict as Lightning's docs write it."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Subset, TensorDataset, random_split
from torchmetrics import MeanAbsoluteError


class RegressionData(L.LightningDataModule):
    def __init__(self, n: int = 512, features: int = 8, batch_size: int = 32, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        g = torch.Generator().manual_seed(self.hparams.seed)
        x = torch.randn(self.hparams.n, self.hparams.features, generator=g)
        weights = torch.randn(self.hparams.features, generator=g)
        y = x @ weights + torch.sin(2 * x[:, 0]) + 0.1 * torch.randn(self.hparams.n, generator=g)  # (n,)
        self.train, self.val, self.test = random_split(
            TensorDataset(x, y), [0.7, 0.15, 0.15], generator=torch.Generator().manual_seed(self.hparams.seed)
        )
        # The test rows' features alone: a TensorDataset of one tensor, whose batches are one-element lists [x].
        self.predict = Subset(TensorDataset(x), self.test.indices)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=self.hparams.batch_size)

    def test_dataloader(self):
        return DataLoader(self.test, batch_size=self.hparams.batch_size)

    def predict_dataloader(self):
        return DataLoader(self.predict, batch_size=self.hparams.batch_size)


class PlateauRegressor(L.LightningModule):
    def __init__(
        self, features: int = 8, hidden: int = 32, lr: float = 1e-2, factor: float = 0.5, patience: int = 2
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.val_mae = MeanAbsoluteError()
        self.test_mae = MeanAbsoluteError()
        self.example_input_array = torch.zeros(2, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)  # (N, F) -> (N,)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def _evaluate(self, batch, stage: str, mae: MeanAbsoluteError) -> None:
        x, y = batch
        prediction = self(x)
        self.log(f"{stage}_loss", F.mse_loss(prediction, y), prog_bar=True)
        mae(prediction, y)
        self.log(f"{stage}_mae", mae)

    def validation_step(self, batch, batch_idx):
        self._evaluate(batch, "val", self.val_mae)

    def test_step(self, batch, batch_idx):
        self._evaluate(batch, "test", self.test_mae)

    def predict_step(self, batch, batch_idx):
        (x,) = batch
        return self(x)  # (N,)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="min", factor=self.hparams.factor, patience=self.hparams.patience
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": plateau, "monitor": "val_loss"}}
