"""Per-pixel segmentation of generated 16x16 images: one circle or one square on a noisy background, each pixel
labelled 0 (background), 1 (circle) or 2 (square); IoU by torchmetrics' JaccardIndex."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split
from torchmetrics import JaccardIndex


class ShapesData(L.LightningDataModule):
    def __init__(self, n: int = 256, size: int = 16, batch_size: int = 32, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        n, size = self.hparams.n, self.hparams.size
        g = torch.Generator().manual_seed(self.hparams.seed)
        centre = torch.randint(4, size - 4, (n, 2, 1, 1), generator=g)
        radius = torch.randint(2, 5, (n, 1, 1), generator=g)  # the shape stays inside the image
        rows, cols = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
        dy, dx = rows - centre[:, 0], cols - centre[:, 1]  # (n, size, size)
        circle = dy**2 + dx**2 <= radius**2
        square = torch.maximum(dy.abs(), dx.abs()) <= radius
        is_square = torch.rand(n, 1, 1, generator=g) < 0.5
        masks = torch.where(is_square, 2 * square, circle.long())  # (n, size, size) long
        images = (masks > 0).float().unsqueeze(1) + 0.3 * torch.randn(n, 1, size, size, generator=g)  # (n, 1, ...)
        self.train, self.val, self.test = random_split(
            TensorDataset(images, masks), [0.7, 0.15, 0.15], generator=torch.Generator().manual_seed(self.hparams.seed)
        )

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=self.hparams.batch_size)

    def test_dataloader(self):
        return DataLoader(self.test, batch_size=self.hparams.batch_size)

    def predict_dataloader(self):
        return DataLoader(self.test, batch_size=self.hparams.batch_size)


class Segmenter(L.LightningModule):
    def __init__(self, num_classes: int = 3, channels: int = 16, lr: float = 1e-2) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.encode = nn.Sequential(nn.Conv2d(1, channels, 3, padding=1), nn.ReLU())
        # A pooled path sees the whole shape (corners tell a square from a circle), the full-size one its edge.
        self.context = nn.Sequential(
            nn.MaxPool2d(2), nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(), nn.Upsample(scale_factor=2)
        )
        self.head = nn.Conv2d(2 * channels, num_classes, 1)
        self.val_iou = JaccardIndex(task="multiclass", num_classes=num_classes)
        self.test_iou = JaccardIndex(task="multiclass", num_classes=num_classes)
        self.example_input_array = torch.zeros(2, 1, 16, 16)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        features = self.encode(images)  # (N, channels, H, W)
        return self.head(torch.cat([features, self.context(features)], dim=1))  # (N, num_classes, H, W) logits

    def training_step(self, batch, batch_idx):
        images, masks = batch
        loss = F.cross_entropy(self(images), masks)
        self.log("train_loss", loss)
        return loss

    def _evaluate(self, batch, stage: str, iou: JaccardIndex) -> None:
        images, masks = batch
        logits = self(images)
        self.log(f"{stage}_loss", F.cross_entropy(logits, masks), prog_bar=True)
        iou(logits.argmax(1), masks)
        self.log(f"{stage}_iou", iou, prog_bar=True)

    def validation_step(self, batch, batch_idx):
        self._evaluate(batch, "val", self.val_iou)

    def test_step(self, batch, batch_idx):
        self._evaluate(batch, "test", self.test_iou)

    def predict_step(self, batch, batch_idx):
        images, _ = batch
        return self(images)  # (N, num_classes, 16, 16) logits

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
