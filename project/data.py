"""Labelled samples in memory: a seeded train/val/test split, train-only normalization statistics, batches.

`ArrayDataModule` holds what every dataset shares; a subclass only says how to `load()` its arrays and how many
classes there are: `DigitsDataModule` (scikit-learn's digits) and `FileDataModule` (your own .npz or .csv). Samples
may have any shape: (N, F) tables, (N, L) or (N, C, L) signals, (N, H, W) or (N, C, H, W) images. Any other
LightningDataModule works too (docs/contract.md says what the model and the machinery read from one).
"""

import math
from abc import ABC, abstractmethod
from functools import cached_property
from pathlib import Path
from typing import Literal

import lightning as L
import torch
from jsonargparse.typing import OpenUnitInterval, PositiveInt, restricted_number_type
from lightning.pytorch.utilities import AttributeDict

from lightning_runs.console import say
from lightning_runs.data import Batch, ShardSampler, TensorBatches, fold_indices, on_device, split_indices
from lightning_runs.data.fingerprint import check_same_data, fingerprint
from lightning_runs.errors import UsageError

from project.augment import random_affine
from project.files import load_labelled, load_samples

# What NumPy's and Lightning's seeding accept; the per-epoch order is drawn from seed * 100_003 + epoch (batches.py),
# which must fit torch's 64-bit generator seed.
Seed = restricted_number_type("Seed", int, [(">=", 0), ("<", 2**32)])
# Finite, unlike jsonargparse's NonNegativeFloat: inf degrees or pixels of augmentation (or an inf decay, model.py)
# is NaN at the first step. jsonargparse registers one type per set of bounds: this is the one.
NonNegativeFinite = restricted_number_type("NonNegativeFinite", float, [(">=", 0), ("<", math.inf)])
# How a sample is normalized and augmented: per channel and rotated (an image), per channel (a signal), per feature.
SampleKind = Literal["image", "signal", "table"]
# What a sample of each rank is taken for, unless the DataModule says otherwise: a signal is (L,) or (C, L) too, so
# signals are declared (FileDataModule's `kind`, or a subclass's `sample_kind`).
KIND_BY_RANK: dict[int, SampleKind] = {1: "table", 2: "image", 3: "image"}
# The sample axis that holds channels, per kind and rank: statistics are per channel there, per feature in a table.
CHANNEL_AXIS = {("image", 3): 0, ("signal", 2): 0}


class ArrayDataModule(L.LightningDataModule, ABC):
    """Any labelled samples that fit in memory; a subclass says how to `load()` them and their `num_classes`."""

    hparams: AttributeDict  # Lightning types it `AttributeDict | MutableMapping`; save_hyperparameters makes the first

    def __init__(
        self,
        batch_size: PositiveInt = 64,
        val_fraction: OpenUnitInterval = 0.1,
        test_fraction: OpenUnitInterval = 0.1,
        seed: Seed = 0,
        # Per-sample rotation (degrees) and shift (pixels) of images while training: 25 cross-validation errors vs
        # 40 without, and vs 32 for (10, 1) or 62 for (15, 1.5) (docs/results.md). 0 and 0 turn it off;
        # samples that are not images are never augmented.
        rotation: NonNegativeFinite = 5.0,
        shift: NonNegativeFinite = 0.5,
        predict_path: Path | None = None,
        # Cross-validation (`python -m project cv --folds K` sets both): validate on fold `fold` of `folds`
        # of the samples outside the test split, stratified by label; val_fraction is then unused.
        folds: PositiveInt | None = None,
        fold: int = 0,
    ) -> None:
        super().__init__()
        if val_fraction + test_fraction >= 1:
            raise ValueError(f"val_fraction + test_fraction must be below 1, got {val_fraction + test_fraction}")
        if folds is not None and not 0 <= fold < folds > 1:
            raise ValueError(f"fold {fold} of {folds}: folds must be at least 2, and fold 0 to folds - 1")
        self.save_hyperparameters()
        self.splits: dict[str, Batch] = {}  # name -> (samples, labels), set in setup()
        self.mean = self.std = None  # train-split statistics, broadcastable to one sample, set in setup()
        self._train_batches: TensorBatches | None = None
        self._resume_state: dict[str, int] | None = None
        self._predict_samples = None

    @abstractmethod
    def load(self) -> tuple[torch.Tensor, torch.Tensor]:
        """All samples: (N, *sample_shape) float32 raw values and (N,) int64 labels in 0..num_classes-1."""

    @property
    @abstractmethod
    def num_classes(self) -> int:
        """Read when the model is built, before setup() (cli.py links it to model.num_classes)."""

    @cached_property
    def _loaded(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.load()

    @cached_property
    def read(self) -> str:
        """The fingerprint of the samples, which a resume compares (load_state_dict): hashed once, when first saved."""
        samples, labels = self._loaded
        return fingerprint(len(labels), samples, labels)

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """One sample's shape, read when the model is built (cli.py links it to model.input_shape)."""
        return tuple(self._loaded[0].shape[1:])

    @property
    def sample_kind(self) -> SampleKind | None:
        """How samples are normalized, augmented and drawn; a subclass of signals says "signal"."""
        return KIND_BY_RANK.get(len(self.sample_shape))

    def split(self, n: int) -> dict[str, torch.Tensor]:
        seed, folds = self.hparams.seed, self.hparams.folds
        split = split_indices(n, self.hparams.val_fraction, self.hparams.test_fraction, seed)
        if folds is None:
            return split
        rest = torch.cat([split["val"], split["train"]])  # the same test split as a run without folds
        train, val = fold_indices(len(rest), folds, self.hparams.fold, seed, labels=self._loaded[1][rest])
        return {"train": rest[train], "val": rest[val], "test": split["test"]}

    def setup(self, stage: str) -> None:
        if stage == "predict" and self.hparams.predict_path is not None:
            # Checked against the shape the model takes: a file of other samples is refused before anything runs.
            if self._predict_samples is None:
                self._predict_samples = load_samples(self.hparams.predict_path, self.sample_shape)
            return  # a file to predict needs no dataset
        if not self.splits:  # fit then test in one process: the same split, loaded once
            samples, labels = self._loaded
            self.splits = {name: (samples[idx], labels[idx]) for name, idx in self.split(len(samples)).items()}
            self.mean, self.std = statistics(self.splits["train"][0], self.sample_kind)
            self._say_how_samples_are_taken()
        self._check_splits(stage)

    def _say_how_samples_are_taken(self) -> None:
        kind, shape = self.sample_kind, self.sample_shape
        # (3, 128) is more likely three channels of a signal than a 3-pixel-high image: say how to tell.
        if kind == "image" and len(shape) == 2 and not self.hparams.get("kind") and max(shape) >= 8 * min(shape):
            say(f"Samples of shape {shape} are taken for images; --data.kind signal if they are a signal's channels")
        if kind != "image" and (self.hparams.rotation or self.hparams.shift):
            say(f"Augmentation (--data.rotation, --data.shift) is for images: off for {kind} samples")

    def _check_splits(self, stage: str) -> None:
        """Each split the command reads holds data: a full training batch on every process, a validation sample, a
        test sample. Refused in one line before anything trains."""
        sizes = {name: len(labels) for name, (_, labels) in self.splits.items()}
        needed = {"fit": ("train", "val"), "validate": ("val",), "test": ("test",)}.get(stage, ("test",))
        for split in set(needed) - {"train"}:
            if sizes[split] == 0:
                fraction = f"{split}_fraction"
                raise UsageError(
                    f"--data.{fraction} {self.hparams[fraction]}: the {split} split of {sum(sizes.values())} samples"
                    " is empty; raise it"
                    + (" (best.ckpt and early stopping are chosen on it)" if split == "val" else "")
                )
        world = self.trainer.world_size if self.trainer is not None else 1
        per_process, batch_size = math.ceil(sizes["train"] / world), self.hparams.batch_size
        if "train" in needed and per_process < batch_size:
            where = f" ({per_process} per process)" if world > 1 else ""
            raise UsageError(
                f"--data.batch_size {batch_size}: the train split has {sizes['train']} samples{where}, not one full"
                " batch (a partial last batch is dropped), so nothing would train; lower it"
            )

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
        overfitting = self.trainer is not None and self.trainer.overfit_batches > 0  # ty: ignore[missing-attribute]  # Lightning sets it outside Trainer (trainer/setup.py)
        self._train_batches = self._batches(self.splits["train"], shuffle=not overfitting, train=True)
        if self._resume_state is not None:
            self._train_batches.load_state_dict(self._resume_state)
            self._resume_state = None
        return self._train_batches

    # The train loader's position also travels in the DataModule's own checkpoint state, which Lightning restores
    # before building the loader. Lightning restores a loader's own state only if the loader is built after the
    # checkpoint is read, but `estimated_stepping_batches` in configure_optimizers builds it first: a mid-epoch
    # resume would replay the epoch from batch 0.
    def state_dict(self) -> dict:
        if self._train_batches is None:
            return {}
        state = self._train_batches.state_dict()
        # An epoch cut short by --trainer.limit_train_batches ends before the loader does: saved at its end, the
        # next epoch starts at its first batch, not where this one stopped.
        if self.trainer is not None and state["position"] >= self.trainer.num_training_batches:
            state = {**state, "position": 0}
        return {"train_batches": state, "data": self.read}

    def load_state_dict(self, state_dict: dict) -> None:
        # Other samples (a file rewritten at the same path) would resume into another split and another epoch length.
        what = self.hparams.get("path") or type(self).__name__
        check_same_data(self, state_dict.get("data"), lambda: self.read, what)
        self._resume_state = state_dict.get("train_batches")

    def val_dataloader(self) -> TensorBatches:
        return self._batches(self.splits["val"])

    def test_dataloader(self) -> TensorBatches:
        return self._batches(self.splits["test"])

    def on_after_batch_transfer(self, batch: Batch, dataloader_idx: int) -> Batch:
        # Training-time augmentation of images, on the device, one kernel per batch: degrees in [-rotation,
        # rotation], pixels in [-shift, shift]. 0 and 0 turn it off.
        # Batches only: the model summary sends the model's example input, a bare tensor, through here too, and
        # augmenting it would draw from the RNG (a run with the summary would train differently from one without).
        augmenting = self.hparams.rotation or self.hparams.shift
        batch_of_samples = isinstance(batch, tuple | list) and self.sample_kind == "image"
        if self.trainer is not None and self.trainer.training and augmenting and batch_of_samples:
            samples, *rest = batch
            return (random_affine(samples, self.hparams.rotation, self.hparams.shift), *rest)
        return batch

    def predict_dataloader(self) -> TensorBatches:
        if self._predict_samples is None:
            return self._batches(self.splits["test"])
        return self._batches((self._predict_samples,))


def statistics(samples: torch.Tensor, kind: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard deviation of (N, *shape) samples, broadcastable to one sample: per channel of images and
    signals ((C, 1, 1), (C, 1); one value without a channel axis), per feature of a table ((F,)). A constant feature
    gets a standard deviation of 1, so that it is centred rather than divided by zero."""
    if kind == "table":
        dims = (0,)
    else:
        channel = CHANNEL_AXIS.get((kind, samples.ndim - 1))
        dims = tuple(d for d in range(samples.ndim) if channel is None or d != channel + 1)
    mean = samples.mean(dim=dims, keepdim=True)[0]
    std = samples.std(dim=dims, keepdim=True)[0]
    return mean, torch.where(std > 0, std, torch.ones_like(std))


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
    """Your own labelled samples from one file (see `load_labelled`), split and normalized like the digits."""

    def __init__(
        self,
        path: str,
        num_classes: PositiveInt | None = None,
        sample_shape: tuple[PositiveInt, ...] | None = None,
        kind: SampleKind | None = None,
        **kwargs,
    ) -> None:
        """`path`: a str, not a Path, as checkpoints store it for weights_only loading. `num_classes`: by default one
        more than the largest label. `sample_shape`: by default the file's (a CSV's rows are (F,) features); flat
        rows of as many values are reshaped to it. `kind`: by default by the sample's rank (1: table, 2 or 3:
        image); "signal" for (L,) or (C, L) signals. Checkpoints keep all three, so predicting a file from one
        never reads `path`."""
        super().__init__(**kwargs)
        if num_classes is None or sample_shape is None:  # the model needs both when it is built: read the file now
            samples, labels = self.load()
            found = {"num_classes": int(labels.max()) + 1, "sample_shape": list(samples.shape[1:])}
            # Saved as given, so checkpoints and the logged hyperparameters (merged with the model's) agree.
            self.save_hyperparameters({**self.hparams, **{k: v for k, v in found.items() if self.hparams[k] is None}})
        # Plain ints in a list, as the model keeps its input shape (model.py).
        self.hparams.sample_shape = [int(size) for size in self.hparams.sample_shape]

    def load(self) -> tuple[torch.Tensor, torch.Tensor]:
        if "_labelled" not in self.__dict__:
            path, shape = Path(self.hparams.path), self.hparams.sample_shape
            samples, labels = load_labelled(path, None if shape is None else tuple(shape))
            classes = self.hparams.num_classes
            if classes is not None and labels.max() >= classes:
                raise UsageError(f"{path}: label {labels.max().item()} is not below --data.num_classes {classes}")
            self._labelled = samples, labels
        return self._labelled

    @property
    def num_classes(self) -> int:
        return self.hparams.num_classes

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return tuple(self.hparams.sample_shape)

    @property
    def sample_kind(self) -> SampleKind | None:
        return self.hparams.kind or KIND_BY_RANK.get(len(self.sample_shape))
