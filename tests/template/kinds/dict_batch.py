"""A classifier of feature vectors whose DataModule yields dict batches, {"features": (N, F), "label": (N,)}, the way
rows of a table or a JSON file read; metrics logged in the docs' underscore style (val_loss, val_acc)."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset, Subset, random_split
from torchmetrics import Accuracy


class Records(Dataset):
    """Rows as dicts; the default collate stacks each key. Without labels, a row is its features alone."""

    def __init__(self, features: torch.Tensor, labels: torch.Tensor | None = None) -> None:
        self.features, self.labels = features, labels

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        if self.labels is None:
            return {"features": self.features[i]}
        return {"features": self.features[i], "label": self.labels[i]}


class DictData(L.LightningDataModule):
    def __init__(
        self, n: int = 600, features: int = 10, num_classes: int = 4, batch_size: int = 32, seed: int = 0
    ) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        g = torch.Generator().manual_seed(self.hparams.seed)
        centres = 2 * torch.randn(self.hparams.num_classes, self.hparams.features, generator=g)
        labels = torch.randint(self.hparams.num_classes, (self.hparams.n,), generator=g)
        features = centres[labels] + torch.randn(self.hparams.n, self.hparams.features, generator=g)
        self.train, self.val, self.test = random_split(
            Records(features, labels), [0.7, 0.15, 0.15], generator=torch.Generator().manual_seed(self.hparams.seed)
        )
        self.predict = Subset(Records(features), self.test.indices)  # the test rows as new data comes: unlabelled

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=self.hparams.batch_size)

    def test_dataloader(self):
        return DataLoader(self.test, batch_size=self.hparams.batch_size)

    def predict_dataloader(self):
        return DataLoader(self.predict, batch_size=self.hparams.batch_size)


class DictBatchClassifier(L.LightningModule):
    def __init__(self, features: int = 10, num_classes: int = 4, hidden: int = 32, lr: float = 1e-2) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))
        self.train_acc = Accuracy(task="multiclass", num_classes=num_classes)
        self.val_acc = Accuracy(task="multiclass", num_classes=num_classes)
        self.test_acc = Accuracy(task="multiclass", num_classes=num_classes)
        self.example_input_array = torch.zeros(2, features)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)  # (N, features) -> (N, num_classes) logits

    def _step(self, batch: dict[str, torch.Tensor], stage: str, accuracy: Accuracy) -> torch.Tensor:
        logits = self(batch["features"])
        loss = F.cross_entropy(logits, batch["label"])
        accuracy(logits, batch["label"])
        self.log(f"{stage}_loss", loss, prog_bar=True)
        self.log(f"{stage}_acc", accuracy, prog_bar=True)
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train", self.train_acc)

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val", self.val_acc)

    def test_step(self, batch, batch_idx):
        self._step(batch, "test", self.test_acc)

    def predict_step(self, batch, batch_idx):
        return self(batch["features"]).softmax(-1)  # (N, num_classes) probabilities

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
