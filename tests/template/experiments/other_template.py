"""A classifier written for another template: its own argument names (`in_features`, `n_classes`, not `input_shape`,
`num_classes`), torchmetrics for accuracy, `self.log` alone, an optimizer from configure_optimizers. The data is
scikit-learn's bundled wine table (178 rows, 13 features on very different scales, 3 cultivars), standardized."""

import lightning as L
import torch
import torchmetrics
from sklearn.datasets import load_wine
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def wine_split(seed: int = 0) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """train/val/test (features (N, 13), cultivar (N,) int64), standardized with the training split's statistics."""
    x, y = load_wine(return_X_y=True)
    x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(y)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    parts = {"train": order[:110], "val": order[110:140], "test": order[140:]}
    mean, std = x[parts["train"]].mean(0), x[parts["train"]].std(0)
    return {name: ((x[i] - mean) / std, y[i]) for name, i in parts.items()}


class WineTable(L.LightningDataModule):
    def __init__(self, bs: int = 16, split_seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        self.tables = wine_split(self.hparams.split_seed)

    def train_dataloader(self):
        return DataLoader(TensorDataset(*self.tables["train"]), batch_size=self.hparams.bs, shuffle=True)

    def val_dataloader(self):
        return DataLoader(TensorDataset(*self.tables["val"]), batch_size=self.hparams.bs)

    def test_dataloader(self):
        return DataLoader(TensorDataset(*self.tables["test"]), batch_size=self.hparams.bs)

    def predict_dataloader(self):
        return DataLoader(self.tables["test"][0], batch_size=self.hparams.bs)


class TabularNet(L.LightningModule):
    def __init__(self, in_features: int, n_classes: int, lr: float = 1e-3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(in_features, 32), nn.ReLU(), nn.Linear(32, n_classes))
        self.val_acc = torchmetrics.Accuracy(task="multiclass", num_classes=n_classes)
        self.test_acc = torchmetrics.Accuracy(task="multiclass", num_classes=n_classes)
        self.example_input_array = torch.zeros(4, in_features)

    def forward(self, x):
        return self.net(x)  # (N, n_classes) logits

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.val_acc(logits, y)
        self.log("val/loss", nn.functional.cross_entropy(logits, y))
        self.log("val/acc", self.val_acc)

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.test_acc(self(x), y)
        self.log("test/acc", self.test_acc)

    def predict_step(self, batch, batch_idx):
        return self(batch).argmax(dim=1)  # (N,) cultivar

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
