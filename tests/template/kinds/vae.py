"""A variational autoencoder on generated 8x8 Gaussian blobs. Its batches are the images alone, (N, 1, 8, 8), with no
targets; its forward samples a code (the reparameterization), so two calls on one input differ."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, random_split


class BlobsData(L.LightningDataModule):
    def __init__(self, n: int = 512, batch_size: int = 64, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        g = torch.Generator().manual_seed(self.hparams.seed)
        centre = 1 + 5 * torch.rand(self.hparams.n, 2, 1, 1, generator=g)
        width = 0.8 + torch.rand(self.hparams.n, 1, 1, generator=g)
        grid = torch.arange(8.0)
        dy, dx = grid.view(8, 1) - centre[:, 0], grid.view(1, 8) - centre[:, 1]  # (n, 8, 8)
        images = torch.exp(-(dy**2 + dx**2) / (2 * width**2)).unsqueeze(1)  # (n, 1, 8, 8), in (0, 1]
        # A tensor is itself a dataset: batches are (N, 1, 8, 8) tensors, not tuples.
        self.train, self.val = random_split(
            images, [0.8, 0.2], generator=torch.Generator().manual_seed(self.hparams.seed)
        )

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=self.hparams.batch_size)

    def predict_dataloader(self):
        return DataLoader(self.val, batch_size=self.hparams.batch_size)


class VAE(L.LightningModule):
    def __init__(self, latent_dim: int = 4, hidden: int = 64, kl_coeff: float = 1.0, lr: float = 1e-3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.Sequential(nn.Flatten(), nn.Linear(64, hidden), nn.ReLU())
        self.fc_mu = nn.Linear(hidden, latent_dim)
        self.fc_var = nn.Linear(hidden, latent_dim)
        self.decoder = nn.Sequential(nn.Linear(latent_dim, hidden), nn.ReLU(), nn.Linear(hidden, 64))
        self.example_input_array = torch.zeros(2, 1, 8, 8)

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.encoder(x)
        return self.fc_mu(h), self.fc_var(h)  # (N, latent_dim) each: the mean and log-variance of q(z|x)

    def sample(self, mu: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
        return mu + torch.randn_like(mu) * torch.exp(0.5 * log_var)  # differentiable in mu and log_var

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z).view(-1, 1, 8, 8)  # each pixel's logit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.decode(self.sample(*self.encode(x))))  # (N, 1, 8, 8), a new sample every call

    def _step(self, x: torch.Tensor, stage: str) -> torch.Tensor:
        mu, log_var = self.encode(x)
        recon_loss = F.binary_cross_entropy_with_logits(self.decode(self.sample(mu, log_var)), x, reduction="sum")
        kl = -0.5 * torch.sum(1 + log_var - mu**2 - log_var.exp())
        loss = (recon_loss + self.hparams.kl_coeff * kl) / len(x)  # the negative ELBO, per image
        self.log_dict({f"{stage}_recon_loss": recon_loss / len(x), f"{stage}_kl": kl / len(x), f"{stage}_loss": loss})
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def predict_step(self, batch, batch_idx):
        return self.encode(batch)[0]  # (N, latent_dim): each image's code, the mean of q(z|x)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
