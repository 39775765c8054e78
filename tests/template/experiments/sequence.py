"""A GRU classifying generated sequences (N, 30, 2): whether a random walk (feature 0's running sum) ever rises
above 3 within the 30 steps. Feature 1 is noise. The answer depends on the order of the steps, not on their total."""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

STEPS, FEATURES, THRESHOLD = 30, 2, 3.0


def sequences(seed: int = 0, n: int = 1200) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """train/val/test (sequences (N, 30, 2), labels (N,) int64: 1 where the running sum of feature 0 crossed 3)."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, STEPS, FEATURES, generator=generator)
    y = (x[..., 0].cumsum(dim=1).amax(dim=1) > THRESHOLD).long()
    parts = {"train": slice(0, 800), "val": slice(800, 1000), "test": slice(1000, n)}
    return {name: (x[part], y[part]) for name, part in parts.items()}


class WalkData(L.LightningDataModule):
    num_classes = 2

    def __init__(self, batch_size: int = 50, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        self.splits = sequences(self.hparams.seed)

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


class GRUClassifier(L.LightningModule):
    def __init__(self, num_classes: int = 2, features: int = FEATURES, hidden: int = 16, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.gru = nn.GRU(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, num_classes)
        self.example_input_array = torch.zeros(2, STEPS, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        states, _ = self.gru(x)  # (N, T, hidden)
        return self.head(states[:, -1])  # (N, num_classes) logits, from the last step's state

    def _step(self, batch, stage: str) -> torch.Tensor:
        x, y = batch
        logits = self(x)
        loss = nn.functional.cross_entropy(logits, y)
        self.log(f"{stage}/loss", loss)
        self.log(f"{stage}/acc", (logits.argmax(dim=1) == y).float().mean())
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._step(batch, "test")

    def predict_step(self, batch, batch_idx):
        return self(batch).softmax(dim=1)  # (N, num_classes) probabilities

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
