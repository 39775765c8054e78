"""A GAN on 2-D points from a mixture of 8 Gaussians, trained as the docs' GAN example trains: manual optimization,
the generator's and the discriminator's optimizers stepped in turn, a training_step that returns nothing."""

import math

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split


class MixtureData(L.LightningDataModule):
    def __init__(self, n: int = 1024, batch_size: int = 64, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        g = torch.Generator().manual_seed(self.hparams.seed)
        component = torch.randint(8, (self.hparams.n,), generator=g)
        angle = component * (2 * math.pi / 8)
        centre = 2 * torch.stack([angle.cos(), angle.sin()], dim=1)  # (n, 2), on a circle of radius 2
        points = centre + 0.05 * torch.randn(self.hparams.n, 2, generator=g)
        # Batches of (points (N, 2), component (N,)): the component is carried as a label, and unused.
        self.train, self.val, self.predict = random_split(
            TensorDataset(points, component),
            [0.7, 0.15, 0.15],
            generator=torch.Generator().manual_seed(self.hparams.seed),
        )

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.hparams.batch_size, shuffle=True)

    # As the docs' MNIST GAN: its data has a validation split that the GAN never steps through.
    def val_dataloader(self):
        return DataLoader(self.val, batch_size=self.hparams.batch_size)

    def predict_dataloader(self):
        return DataLoader(self.predict, batch_size=self.hparams.batch_size)


class GAN(L.LightningModule):
    def __init__(
        self, latent_dim: int = 8, hidden: int = 64, lr: float = 2e-4, b1: float = 0.5, b2: float = 0.999
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False  # two optimizers, stepped in turn by training_step
        self.generator = nn.Sequential(
            nn.Linear(latent_dim, hidden),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden, hidden),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden, 2),
        )
        self.discriminator = nn.Sequential(
            nn.Linear(2, hidden),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden, hidden),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden, 1),
            nn.Sigmoid(),  # the probability that a point is real, for binary_cross_entropy as in the docs' GAN
        )
        self.example_input_array = torch.zeros(2, latent_dim)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.generator(z)  # (N, latent_dim) latents -> (N, 2) points

    def training_step(self, batch, batch_idx):
        points, _ = batch
        optimizer_g, optimizer_d = self.optimizers()
        z = torch.randn(len(points), self.hparams.latent_dim, device=self.device)
        real = torch.ones(len(points), 1, device=self.device)
        fake = torch.zeros(len(points), 1, device=self.device)

        self.toggle_optimizer(optimizer_g)
        g_loss = F.binary_cross_entropy(self.discriminator(self(z)), real)  # the generator wants fakes taken as real
        self.log("g_loss", g_loss, prog_bar=True)
        self.manual_backward(g_loss)
        optimizer_g.step()
        optimizer_g.zero_grad()
        self.untoggle_optimizer(optimizer_g)

        self.toggle_optimizer(optimizer_d)
        real_loss = F.binary_cross_entropy(self.discriminator(points), real)
        fake_loss = F.binary_cross_entropy(self.discriminator(self(z).detach()), fake)
        d_loss = (real_loss + fake_loss) / 2
        self.log("d_loss", d_loss, prog_bar=True)
        self.manual_backward(d_loss)
        optimizer_d.step()
        optimizer_d.zero_grad()
        self.untoggle_optimizer(optimizer_d)

    def predict_step(self, batch, batch_idx):
        points, _ = batch  # only the batch's size is read: a GAN samples from latents of its own
        return self(torch.randn(len(points), self.hparams.latent_dim, device=self.device))  # (N, 2)

    def configure_optimizers(self):
        betas = (self.hparams.b1, self.hparams.b2)
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=self.hparams.lr, betas=betas)
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=self.hparams.lr, betas=betas)
        return [opt_g, opt_d], []
