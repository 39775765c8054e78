"""A regression on scikit-learn's bundled diabetes table (442 rows, 10 features), standardized by the DataModule."""

import lightning as L
import torch
from sklearn.datasets import load_diabetes
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def split(seed: int = 0) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """train/val/test (features, targets) of the table, features standardized with the training split's statistics."""
    x, y = load_diabetes(return_X_y=True)
    x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    parts = {"train": order[:300], "val": order[300:370], "test": order[370:]}
    mean, std = x[parts["train"]].mean(0), x[parts["train"]].std(0)
    return {name: ((x[i] - mean) / std, y[i]) for name, i in parts.items()}


class DiabetesData(L.LightningDataModule):
    def __init__(self, batch_size: int = 32, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        self.splits = split(self.hparams.seed)

    def _loader(self, name: str, shuffle: bool = False) -> DataLoader:
        return DataLoader(TensorDataset(*self.splits[name]), batch_size=self.hparams.batch_size, shuffle=shuffle)

    def train_dataloader(self):
        return self._loader("train", shuffle=True)

    def val_dataloader(self):
        return self._loader("val")

    def test_dataloader(self):
        return self._loader("test")

    def predict_dataloader(self):
        return DataLoader(self.splits["test"][0], batch_size=self.hparams.batch_size)


class Regressor(L.LightningModule):
    def __init__(self, input_shape: tuple[int, ...] = (10,), hidden: int = 32, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(input_shape[-1], hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.example_input_array = torch.zeros(1, *input_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)  # (N,)

    def _step(self, batch, stage: str) -> torch.Tensor:
        x, y = batch
        prediction = self(x)
        loss = nn.functional.mse_loss(prediction, y)
        self.log(f"{stage}/loss", loss)
        if stage != "train":
            self.log(f"{stage}/mae", (prediction - y).abs().mean())
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._step(batch, "test")

    def predict_step(self, batch, batch_idx):
        return self(batch)  # (N,)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class MLPRegressor(Regressor):
    """Arguments named as the template's model names its own (lr, weight_decay), with defaults of its own."""

    def __init__(self, in_features: int = 10, hidden: int = 64, lr: float = 0.003, weight_decay: float = 1e-4) -> None:
        super().__init__(input_shape=(in_features,), hidden=hidden, lr=lr)
        self.save_hyperparameters()  # its own arguments, in place of the Regressor's

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
