"""An MLP autoencoder on generated data: 20 features that are a smooth function of 3 hidden factors, plus noise.
Its batches are the samples alone, (N, 20), with no targets; it learns to give them back through a 3-value code."""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader

FEATURES, FACTORS = 20, 3


def samples(seed: int = 0, n: int = 800) -> dict[str, torch.Tensor]:
    """train/val/test samples (N, 20): a fixed random mixing of 3 factors through tanh, and 5% noise."""
    generator = torch.Generator().manual_seed(seed)
    factors = torch.randn(n, FACTORS, generator=generator)
    mixing = torch.randn(FACTORS, FEATURES, generator=generator)
    x = torch.tanh(factors @ mixing / 2) + 0.05 * torch.randn(n, FEATURES, generator=generator)
    return {"train": x[:500], "val": x[500:650], "test": x[650:]}


class FactorData(L.LightningDataModule):
    def __init__(self, batch_size: int = 50, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        self.splits = samples(self.hparams.seed)

    def _loader(self, name: str, shuffle: bool = False) -> DataLoader:
        return DataLoader(self.splits[name], batch_size=self.hparams.batch_size, shuffle=shuffle)

    def train_dataloader(self):
        return self._loader("train", shuffle=True)

    def val_dataloader(self):
        return self._loader("val")

    def test_dataloader(self):
        return self._loader("test")

    def predict_dataloader(self):
        return self._loader("test")


class AutoEncoder(L.LightningModule):
    def __init__(self, features: int = FEATURES, code: int = FACTORS, hidden: int = 32, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.Sequential(nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, code))
        self.decoder = nn.Sequential(nn.Linear(code, hidden), nn.Tanh(), nn.Linear(hidden, features))
        self.example_input_array = torch.zeros(2, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))  # (N, features), the reconstruction

    def _step(self, x: torch.Tensor, stage: str) -> torch.Tensor:
        loss = nn.functional.mse_loss(self(x), x)
        self.log(f"{stage}/loss", loss)
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._step(batch, "test")

    def predict_step(self, batch, batch_idx):
        return self(batch)  # (N, 20)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
