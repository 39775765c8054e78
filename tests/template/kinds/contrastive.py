"""SimCLR on generated feature vectors, as Lightning's SimCLR tutorial trains it: each sample seen twice, each time
augmented, and the NT-Xent (InfoNCE) loss pulls a sample's two views together against the rest of the batch. Batches
are dicts {"view1", "view2"}; the module has no predict_step of its own (Lightning's default calls forward)."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset, random_split


class TwoViews(Dataset):
    """Each sample twice, each time rescaled, jittered and with a random tenth of its features zeroed."""

    def __init__(self, samples: Dataset) -> None:
        self.samples = samples

    def __len__(self) -> int:
        return len(self.samples)

    def augment(self, x: torch.Tensor) -> torch.Tensor:
        keep = (torch.rand_like(x) > 0.1).float()
        return (x * (0.8 + 0.4 * torch.rand(1)) + 0.1 * torch.randn_like(x)) * keep

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        x = self.samples[i]
        return {"view1": self.augment(x), "view2": self.augment(x)}


class ClustersData(L.LightningDataModule):
    def __init__(
        self, n: int = 512, features: int = 16, clusters: int = 6, batch_size: int = 64, seed: int = 0
    ) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        g = torch.Generator().manual_seed(self.hparams.seed)
        prototypes = torch.randn(self.hparams.clusters, self.hparams.features, generator=g)
        cluster = torch.randint(self.hparams.clusters, (self.hparams.n,), generator=g)
        samples = prototypes[cluster] + 0.3 * torch.randn(self.hparams.n, self.hparams.features, generator=g)
        self.train, self.val = random_split(
            samples, [0.8, 0.2], generator=torch.Generator().manual_seed(self.hparams.seed)
        )

    # drop_last: NT-Xent compares each view with the rest of its batch, and a short last batch has few to compare.
    def train_dataloader(self):
        return DataLoader(TwoViews(self.train), batch_size=self.hparams.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self):
        return DataLoader(TwoViews(self.val), batch_size=self.hparams.batch_size)

    # The samples themselves, (N, features), unaugmented: what the default predict_step hands to forward.
    def predict_dataloader(self):
        return DataLoader(self.val, batch_size=self.hparams.batch_size)


class Contrastive(L.LightningModule):
    def __init__(
        self,
        features: int = 16,
        hidden: int = 64,
        embedding_dim: int = 32,
        temperature: float = 0.1,
        lr: float = 1e-3,
        weight_decay: float = 1e-4,
        max_epochs: int = 500,  # the cosine schedule's length, as the tutorial gives it
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.backbone = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, embedding_dim))
        # SimCLR's projection head: the loss is taken on its output, the embeddings are the backbone's.
        self.projection = nn.Sequential(nn.ReLU(), nn.Linear(embedding_dim, embedding_dim))
        self.example_input_array = torch.zeros(2, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)  # (N, features) -> (N, embedding_dim)

    def nt_xent(self, batch: dict[str, torch.Tensor], stage: str) -> torch.Tensor:
        z = self.projection(self(torch.cat([batch["view1"], batch["view2"]])))  # (2N, D): first views, then second
        similarity = F.cosine_similarity(z[:, None], z[None, :], dim=-1) / self.hparams.temperature  # (2N, 2N)
        itself = torch.eye(len(z), dtype=torch.bool, device=z.device)
        similarity = similarity.masked_fill(itself, -9e15)  # a view is not its own positive
        partner = itself.roll(len(z) // 2, dims=0)  # row i's positive: the other view of the same sample
        loss = (-similarity[partner] + torch.logsumexp(similarity, dim=-1)).mean()
        top1 = (similarity.argmax(-1) == partner.int().argmax(-1)).float().mean()  # the partner ranked first
        self.log(f"{stage}_loss", loss, prog_bar=True)
        self.log(f"{stage}_acc_top1", top1)
        return loss

    def training_step(self, batch, batch_idx):
        return self.nt_xent(batch, "train")

    def validation_step(self, batch, batch_idx):
        self.nt_xent(batch, "val")

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
            optimizer, T_max=self.hparams.max_epochs, eta_min=self.hparams.lr / 50
        )
        return [optimizer], [scheduler]
