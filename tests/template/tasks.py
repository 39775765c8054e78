"""Tasks beside the digits, of other shapes, for tests that prove the machinery knows only its contract
(docs/contract.md): each is data a user brings (a file, or a DataModule of their own) and, where the template's
networks do not fit, a network of their own. All are generated with a fixed seed or bundled with an installed
package: nothing is downloaded.

- waves: (N, L) signals, noisy sines whose frequency is the class, in an .npz for FileDataModule, learnt by
  `SignalNet` (a user's own Conv1d network);
- blobs: (N, 3, 16, 16) colour images, a square whose colour is the class, from `BlobsDataModule`, an ordinary
  LightningDataModule with plain DataLoaders, learnt by the default DigitsCNN;
- wine: scikit-learn's wine table, (N, 13) features on scales from ~0.1 to ~1,000, in a CSV for FileDataModule,
  learnt by project.networks.MLP.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

# --- waves: (N, L) signals ----------------------------------------------------------------------------------------

WAVE_CYCLES = (2, 5, 9)  # cycles per sample, one frequency per class


def waves(n: int = 600, length: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(n, length) noisy sines of a random phase, amplitude and offset (so the raw values need normalizing), and
    their (n,) classes, the index of their frequency in WAVE_CYCLES."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(len(WAVE_CYCLES), size=n)
    t = np.arange(length) / length
    phase = rng.uniform(0, 2 * math.pi, size=(n, 1))
    amplitude, offset = rng.uniform(5, 15, size=(n, 1)), rng.uniform(90, 110, size=(n, 1))
    cycles = np.asarray(WAVE_CYCLES)[labels][:, None]
    samples = offset + amplitude * np.sin(2 * math.pi * cycles * t + phase) + rng.normal(0, 4, size=(n, length))
    return samples.astype(np.float32), labels


def write_waves(path: Path, **kwargs) -> Path:
    samples, labels = waves(**kwargs)
    np.savez(path, samples=samples, labels=labels)
    return path


class SignalNet(nn.Module):
    """A user's own network for (L,) or (C, L) signals: two convolutions over time, then a mean over time."""

    def __init__(self, num_classes: int, input_shape: tuple[int, ...], channels: int = 16) -> None:
        super().__init__()
        if len(input_shape) not in (1, 2):
            raise ValueError(f"SignalNet takes (L,) or (C, L) signals, not {tuple(input_shape)}")
        self.features = nn.Sequential(
            nn.Conv1d(1 if len(input_shape) == 1 else input_shape[0], channels, kernel_size=5, padding=2),
            nn.ReLU(),
            nn.MaxPool1d(2),  # (N, channels, L/2)
            nn.Conv1d(channels, channels, kernel_size=5, padding=2),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
            nn.Flatten(),  # (N, channels)
        )
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.unsqueeze(1) if x.ndim == 2 else x  # (N, L) -> (N, 1, L)
        return self.head(self.features(x))  # (N, num_classes) logits


# --- blobs: (N, 3, H, W) colour images, from an ordinary LightningDataModule ---------------------------------------

COLOURS = ((200, 40, 40), (40, 200, 40), (40, 40, 200), (200, 200, 40))  # RGB 0-255, one colour per class


def blobs(n: int = 512, size: int = 16, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, 3, size, size) raw 0-255 images: a square of a class's colour at a random place on a noisy grey
    background; (n,) classes, the index of the colour in COLOURS."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(len(COLOURS), (n,), generator=generator)
    images = 100 + 20 * torch.randn(n, 3, size, size, generator=generator)
    side = size // 3
    corners = torch.randint(size - side + 1, (n, 2), generator=generator)
    colours = torch.tensor(COLOURS, dtype=torch.float32)[labels]  # (n, 3)
    for image, (top, left), colour in zip(images, corners.tolist(), colours, strict=True):
        image[:, top : top + side, left : left + side] = colour[:, None, None]
    return images.clamp(0, 255), labels


class BlobsDataModule(L.LightningDataModule):
    """What a user writes without the template's ArrayDataModule: the contract's attributes (`num_classes`,
    `sample_shape`, `sample_kind`, train-split `mean` and `std`) and plain DataLoaders over TensorDatasets."""

    sample_kind = "image"

    def __init__(
        self,
        batch_size: int = 32,
        n: int = 512,
        size: int = 16,
        seed: int = 0,
        # Three ways users shuffle: from the global RNG (DataLoader(shuffle=True)), which seed_everything seeds and
        # the checkpoints' RandomState restores; from the loader's own generator, seeded once (PyTorch's
        # reproducibility notes); or seeded by the epoch (a sampler with `set_epoch`, which Lightning calls).
        shuffle: Literal["global", "generator", "epoch"] = "global",
        predict_path: str | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        # Known before setup(): the model is built with them.
        self.num_classes, self.sample_shape = len(COLOURS), (3, size, size)
        self.splits = None
        self.mean = self.std = None

    def setup(self, stage: str) -> None:
        if self.splits is not None:  # called twice (docs/contract.md): once before the run writes, once by the Trainer
            return
        images, labels = blobs(self.hparams.n, self.hparams.size, self.hparams.seed)  # already in random order
        n_val = n_test = self.hparams.n // 8
        n_train = self.hparams.n - n_val - n_test
        bounds = {"train": (0, n_train), "val": (n_train, n_train + n_val), "test": (n_train + n_val, self.hparams.n)}
        self.splits = {name: (images[a:b], labels[a:b]) for name, (a, b) in bounds.items()}
        train = self.splits["train"][0]
        self.mean, self.std = train.mean(dim=(0, 2, 3))[:, None, None], train.std(dim=(0, 2, 3))[:, None, None]

    # batch_size by keyword: Lightning rebuilds a predict loader from its arguments, and a positional one collides.
    def train_dataloader(self) -> DataLoader:
        train, shuffle, seed = self._dataset("train"), self.hparams.shuffle, self.hparams.seed
        order = {"shuffle": True}
        if shuffle == "generator":
            order["generator"] = torch.Generator().manual_seed(seed)
        elif shuffle == "epoch":  # one process: the sampler only draws the order from seed + epoch
            order = {"sampler": DistributedSampler(train, num_replicas=1, rank=0, shuffle=True, seed=seed)}
        return DataLoader(train, batch_size=self.hparams.batch_size, drop_last=True, **order)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self._dataset("val"), batch_size=self.hparams.batch_size)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self._dataset("test"), batch_size=self.hparams.batch_size)

    def predict_dataloader(self) -> DataLoader:
        # Raw images from a .npy file, or the test split's without their labels.
        path = self.hparams.predict_path
        samples = torch.from_numpy(np.load(path)).float() if path else self.splits["test"][0]
        return DataLoader(TensorDataset(samples), batch_size=self.hparams.batch_size)

    def _dataset(self, split: str) -> TensorDataset:
        return TensorDataset(*self.splits[split])


# --- wine: an (N, F) table --------------------------------------------------------------------------------------


def write_wine(path: Path) -> Path:
    """scikit-learn's wine table as a CSV: a header, then each sample's 13 features and its class (0, 1 or 2)."""
    from sklearn.datasets import load_wine

    wine = load_wine()
    rows = np.column_stack([wine.data, wine.target])
    np.savetxt(path, rows, delimiter=",", header=",".join([*wine.feature_names, "label"]), comments="", fmt="%.6g")
    return path


def wine_features() -> np.ndarray:
    from sklearn.datasets import load_wine

    return load_wine().data.astype(np.float32)  # (178, 13) raw features


# --- the tasks, as the tests run them -----------------------------------------------------------------------------


def write_samples(path: Path, samples: np.ndarray) -> Path:
    """Raw samples to predict, as a user has them: one sample a row in a CSV, or an .npy array of any shape."""
    if path.suffix == ".csv":
        np.savetxt(path, samples.reshape(len(samples), -1), delimiter=",", fmt="%.9g")
    else:
        np.save(path, samples)
    return path


@dataclass(frozen=True)
class Task:
    name: str  # its runs' name, runs/<name>/version_N (given with --name in its options)
    options: tuple[str, ...]  # what a user types after `python -m project fit` (and test, predict)
    write_data: Callable[[], object]  # its training data into the working directory (or nothing)
    new_samples: Callable[[], np.ndarray]  # raw samples to predict, (N, *sample_shape)
    other_samples: Callable[[], np.ndarray]  # raw samples of another shape, which predict refuses
    suffix: str  # the file type samples to predict are written as
    other_data: Callable[[], tuple[str, ...]]  # other data of the same shape: writes it, returns the --data options
    learnt: float  # the test accuracy a short fit reaches at least; chance is 1 / classes


FILE = ("--data", "project.data.FileDataModule")
WAVES_FILE = ("--data.path", "waves.npz", "--data.kind", "signal")
TASKS = {
    "waves": Task(
        name="waves",
        options=(*FILE, *WAVES_FILE, "--model.network", "tasks.SignalNet", "--name", "waves"),
        write_data=lambda: write_waves(Path("waves.npz")),
        new_samples=lambda: waves(n=50, seed=1)[0],
        other_samples=lambda: waves(n=5, length=32, seed=1)[0],
        suffix=".npy",
        other_data=lambda: ("--data.path", str(write_waves(Path("more-waves.npz"), seed=2))),
        learnt=0.7,  # chance 1/3
    ),
    "blobs": Task(
        name="blobs",
        options=("--data", "tasks.BlobsDataModule", "--name", "blobs"),
        write_data=lambda: None,  # the DataModule makes its own
        new_samples=lambda: blobs(n=40, seed=1)[0].numpy(),
        other_samples=lambda: blobs(n=5, size=8, seed=1)[0].numpy(),
        suffix=".npy",
        other_data=lambda: ("--data.n", "256"),
        learnt=0.9,  # chance 1/4
    ),
    "wine": Task(
        name="wine",
        options=(*FILE, "--data.path", "wine.csv", "--model.network", "project.networks.MLP", "--name", "wine"),
        write_data=lambda: write_wine(Path("wine.csv")),
        new_samples=wine_features,
        other_samples=lambda: wine_features()[:5, :12],
        suffix=".csv",
        other_data=lambda: ("--data.path", str(write_wine(Path("wine-again.csv")))),
        learnt=0.8,  # chance 1/3 (0.40 for the most frequent class)
    ),
}
