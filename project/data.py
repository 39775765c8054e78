"""Labelled 8x8 images in memory: a seeded train/val/test split, train-only normalization statistics, batches.

`ArrayDataModule` holds what every dataset shares; a subclass only says how to `load()` its arrays and how many
classes there are: `DigitsDataModule` (scikit-learn's digits) and `FileDataModule` (your own .npz or .csv).
"""

from abc import ABC, abstractmethod
from pathlib import Path

import lightning as L
import torch
from jsonargparse.typing import NonNegativeFloat, OpenUnitInterval, PositiveInt, restricted_number_type

from project.augment import random_affine
from project.core.batches import Batch, ShardSampler, TensorBatches, on_device, split_indices
from project.core.errors import UsageError
from project.files import load_images, load_labelled

# What NumPy's and Lightning's seeding accept; the per-epoch order is drawn from seed * 100_003 + epoch (batches.py),
# which must fit torch's 64-bit generator seed.
Seed = restricted_number_type("Seed", int, [(">=", 0), ("<", 2**32)])


class ArrayDataModule(L.LightningDataModule, ABC):
    """Any labelled 8x8 images that fit in memory; a subclass says how to `load()` them and their `num_classes`."""

    sample_kind = "image"

    def __init__(
        self,
        batch_size: PositiveInt = 64,
        val_fraction: OpenUnitInterval = 0.1,
        test_fraction: OpenUnitInterval = 0.1,
        seed: Seed = 0,
        # Per-sample rotation (degrees) and shift (pixels) while training: 25 cross-validation errors vs 40 without,
        # and vs 32 for (10, 1) or 62 for (15, 1.5) (docs/results.md). 0 and 0 turn it off.
        rotation: NonNegativeFloat = 5.0,
        shift: NonNegativeFloat = 0.5,
        predict_path: Path | None = None,
    ) -> None:
        super().__init__()
        if val_fraction + test_fraction >= 1:
            raise ValueError(f"val_fraction + test_fraction must be below 1, got {val_fraction + test_fraction}")
        self.save_hyperparameters()
        self.splits: dict[str, Batch] | None = None  # name -> (images, labels), set in setup()
        self.mean = self.std = None  # train-split pixel statistics, set in setup()
        self._train_batches: TensorBatches | None = None
        self._resume_state: dict[str, int] | None = None
        # Read now, not when predicting: a bad file is refused before the run folder gets anything.
        self._predict_images = None if predict_path is None else load_images(predict_path)

    @abstractmethod
    def load(self) -> tuple[torch.Tensor, torch.Tensor]:
        """All samples: (N, 8, 8) float32 raw pixels and (N,) int64 labels in 0..num_classes-1."""

    @property
    @abstractmethod
    def num_classes(self) -> int:
        """Read when the model is built, before setup() (cli.py links it to model.num_classes)."""

    def split(self, n: int) -> dict[str, torch.Tensor]:
        return split_indices(n, self.hparams.val_fraction, self.hparams.test_fraction, self.hparams.seed)

    def setup(self, stage: str) -> None:
        if self.splits is not None or (stage == "predict" and self._predict_images is not None):
            return  # fit then test in one process: the same split, loaded once; a file to predict needs no dataset
        images, labels = self.load()
        self.splits = {name: (images[idx], labels[idx]) for name, idx in self.split(len(images)).items()}
        train_images = self.splits["train"][0]
        # Statistics of the train split only: validation and test pixels must not leak into training.
        self.mean, self.std = train_images.mean().item(), train_images.std().item()

    def _batches(self, tensors: Batch, shuffle: bool = False, train: bool = False) -> TensorBatches:
        trainer = self.trainer
        rank, world = (trainer.global_rank, trainer.world_size) if trainer is not None else (0, 1)
        if trainer is not None:
            tensors = on_device(tensors, trainer.strategy.root_device)  # once per loader, not per batch
        sampler = ShardSampler(len(tensors[0]), shuffle, self.hparams.seed, rank, world)
        # Training drops the ragged last batch: a batch of one breaks BatchNorm, and epochs are reshuffled.
        return TensorBatches(tensors, self.hparams.batch_size, sampler, drop_last=train)

    def train_dataloader(self) -> TensorBatches:
        # `overfit_batches` means the same few batches every epoch; Lightning can only unshuffle a DataLoader.
        overfitting = self.trainer is not None and self.trainer.overfit_batches > 0
        self._train_batches = self._batches(self.splits["train"], shuffle=not overfitting, train=True)
        if self._resume_state is not None:
            self._train_batches.load_state_dict(self._resume_state)
            self._resume_state = None
        return self._train_batches

    # The train loader's position also travels in the DataModule's own checkpoint state, which Lightning restores
    # before building the loader. Lightning restores a loader's own state only if the loader is built after the
    # checkpoint is read, but `estimated_stepping_batches` in configure_optimizers builds it first: a mid-epoch
    # resume would replay the epoch from batch 0.
    def state_dict(self) -> dict[str, dict[str, int]]:
        return {"train_batches": self._train_batches.state_dict()} if self._train_batches is not None else {}

    def load_state_dict(self, state: dict[str, dict[str, int]]) -> None:
        self._resume_state = state.get("train_batches")

    def val_dataloader(self) -> TensorBatches:
        return self._batches(self.splits["val"])

    def test_dataloader(self) -> TensorBatches:
        return self._batches(self.splits["test"])

    def on_after_batch_transfer(self, batch: Batch, dataloader_idx: int) -> Batch:
        # Training-time augmentation, on the device, one kernel per batch: degrees in [-rotation, rotation],
        # pixels in [-shift, shift]. 0 and 0 turn it off.
        if self.trainer is not None and self.trainer.training and (self.hparams.rotation or self.hparams.shift):
            images, *rest = batch
            return (random_affine(images, self.hparams.rotation, self.hparams.shift), *rest)
        return batch

    def predict_dataloader(self) -> TensorBatches:
        if self._predict_images is None:
            return self._batches(self.splits["test"])
        return self._batches((self._predict_images,))


class DigitsDataModule(ArrayDataModule):
    """scikit-learn's 1,797 handwritten digits: ships inside the package, nothing is downloaded."""

    def load(self) -> tuple[torch.Tensor, torch.Tensor]:
        from sklearn.datasets import load_digits  # here, not at the top: scikit-learn adds 0.12 s to every start-up

        digits = load_digits()
        images = torch.as_tensor(digits.images, dtype=torch.float32)  # (1797, 8, 8), pixels 0-16
        return images, torch.as_tensor(digits.target, dtype=torch.long)

    @property
    def num_classes(self) -> int:
        return 10


class FileDataModule(ArrayDataModule):
    """Your own labelled 8x8 images from one file (see `load_labelled`), split and normalized like the digits."""

    def __init__(self, path: str, num_classes: PositiveInt | None = None, **kwargs) -> None:
        """`path`: a str, not a Path, as checkpoints store it for weights_only loading. `num_classes`: by default one
        more than the largest label; checkpoints keep it, so predicting a file from one never reads `path`."""
        super().__init__(**kwargs)
        self._labelled = None
        if num_classes is None:  # the model needs the class count when it is built: read the file now
            # Saved as given, so checkpoints and the logged hyperparameters (merged with the model's) agree.
            self.save_hyperparameters({**self.hparams, "num_classes": int(self.load()[1].max()) + 1})

    def load(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self._labelled is None:
            images, labels = load_labelled(Path(self.hparams.path))
            classes = self.hparams.num_classes
            if classes is not None and labels.max() >= classes:
                raise UsageError(
                    f"{self.hparams.path}: label {labels.max().item()} is not below --data.num_classes {classes}"
                )
            self._labelled = images, labels
        return self._labelled

    @property
    def num_classes(self) -> int:
        return self.hparams.num_classes
