"""A binary classifier of two inputs at once: a token sequence (N, L) long and numbers (N, F) float. forward takes
them as two positional arguments, and example_input_array is their tuple, which Lightning unpacks into forward."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Subset, TensorDataset, random_split
from torchmetrics import Accuracy


class TokensData(L.LightningDataModule):
    def __init__(
        self,
        n: int = 512,
        length: int = 12,
        vocab_size: int = 20,
        numeric: int = 4,
        batch_size: int = 32,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        g = torch.Generator().manual_seed(self.hparams.seed)
        tokens = torch.randint(self.hparams.vocab_size, (self.hparams.n, self.hparams.length), generator=g)
        numbers = torch.randn(self.hparams.n, self.hparams.numeric, generator=g)
        # The label needs both inputs: token 3 anywhere in the sequence, or a large first number.
        targets = ((tokens == 3).any(1) | (numbers[:, 0] > 1)).float()  # (n,), 0 or 1
        # Batches of (tokens (N, L), numbers (N, F), target (N,)).
        self.train, self.val, self.test = random_split(
            TensorDataset(tokens, numbers, targets),
            [0.7, 0.15, 0.15],
            generator=torch.Generator().manual_seed(self.hparams.seed),
        )
        self.predict = Subset(TensorDataset(tokens, numbers), self.test.indices)  # the test rows, without targets

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=self.hparams.batch_size)

    def test_dataloader(self):
        return DataLoader(self.test, batch_size=self.hparams.batch_size)

    def predict_dataloader(self):
        return DataLoader(self.predict, batch_size=self.hparams.batch_size)


class TwoInputModel(L.LightningModule):
    def __init__(
        self,
        vocab_size: int = 20,
        length: int = 12,
        numeric: int = 4,
        embedding_dim: int = 16,
        hidden: int = 32,
        lr: float = 1e-2,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.head = nn.Sequential(nn.Linear(embedding_dim + numeric, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.val_acc = Accuracy(task="binary")
        self.test_acc = Accuracy(task="binary")
        self.example_input_array = (torch.zeros(2, length, dtype=torch.long), torch.zeros(2, numeric))

    def forward(self, tokens: torch.Tensor, numbers: torch.Tensor) -> torch.Tensor:
        pooled = self.embedding(tokens).max(dim=1).values  # (N, L, E) -> (N, E): was any token a telling one?
        return self.head(torch.cat([pooled, numbers], dim=1)).squeeze(-1)  # (N,) logits

    def training_step(self, batch, batch_idx):
        tokens, numbers, target = batch
        loss = F.binary_cross_entropy_with_logits(self(tokens, numbers), target)
        self.log("train_loss", loss)
        return loss

    def _evaluate(self, batch, stage: str, accuracy: Accuracy) -> None:
        tokens, numbers, target = batch
        logits = self(tokens, numbers)
        self.log(f"{stage}_loss", F.binary_cross_entropy_with_logits(logits, target), prog_bar=True)
        accuracy(torch.sigmoid(logits), target.long())  # torchmetrics counts against integer targets
        self.log(f"{stage}_acc", accuracy, prog_bar=True)

    def validation_step(self, batch, batch_idx):
        self._evaluate(batch, "val", self.val_acc)

    def test_step(self, batch, batch_idx):
        self._evaluate(batch, "test", self.test_acc)

    def predict_step(self, batch, batch_idx):
        tokens, numbers = batch
        return torch.sigmoid(self(tokens, numbers))  # (N,) probabilities

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
