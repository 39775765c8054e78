"""Images on disk: a folder of class sub-folders (or a CSV of `path,label` rows), decoded by DataLoader workers.

Nothing is held in memory but the file list: images are decoded with `torchvision.io.decode_image` and transformed
with `torchvision.transforms.v2` as batches are drawn. The split is seeded and stratified, the normalization
statistics come from the train split in one streamed pass, and the training loader (torchdata's StatefulDataLoader)
resumes mid-epoch at the batch after the checkpoint, with or without workers, augmentation included.
"""

import os
import warnings
from functools import cached_property
from pathlib import Path
from typing import Literal, cast

import lightning as L
import numpy as np
import torch
from lightning.pytorch.utilities import AttributeDict
from torch.utils.data import DataLoader
from torchdata.stateful_dataloader import StatefulDataLoader
from torchvision.io import ImageReadMode
from torchvision.transforms import v2

from lightning_runs.data import fold_indices
from lightning_runs.data.fingerprint import check_same_data, fingerprint
from lightning_runs.errors import UsageError

from project.image_files import (
    SUFFIXES,
    ImageFiles,
    SeededDrawSampler,
    channel_statistics,
    read_csv,
    read_folder,
    refuse_unreadable,
    stratified_split,
)


class ImageFolderDataModule(L.LightningDataModule):
    """`root/<class>/<image>` (class names sorted give the labels 0..K-1, as torchvision's ImageFolder), or a CSV
    with a `path,label` header (paths relative to the CSV's folder, labels any names). Images are float32 in [0, 1]
    (torchvision's convention, so a pretrained network's published mean and std apply); the model normalizes them
    with the train split's `mean` and `std` ((C, 1, 1)), which its checkpoint keeps."""

    sample_kind = "image"
    hparams: AttributeDict  # Lightning types it `AttributeDict | MutableMapping`; save_hyperparameters makes the first

    def __init__(
        self,
        root: str,
        # Every image is resized to this (H, W); 32 x 32 suits the small default CNN.
        image_size: tuple[int, int] = (32, 32),
        channels: Literal[1, 3] = 3,  # 1: decoded as grey, 3: as RGB, whatever the file holds
        batch_size: int = 64,
        val_fraction: float = 0.1,
        test_fraction: float = 0.1,
        seed: int = 0,
        # Training augmentation: a random crop of at least this fraction of the area, resized back (1: none), and a
        # mirror image half the time (off for digits, text or anything with a handedness).
        min_crop: float = 0.8,
        flip: bool = True,
        # Workers decode while the model trains: 2 beat 0 (docs/performance.md, "Images on disk").
        # A number, not the machine's core count: torchdata resumes a loader mid-epoch only with as many workers as
        # it was saved with, so a resume compares it with its run's, and a default that followed the machine would
        # refuse on another.
        num_workers: int = 2,
        pin_memory: bool = True,  # only where the model trains on a CUDA device
        persistent_workers: bool = True,  # workers live across epochs instead of starting again each one
        predict_path: str | None = None,  # a folder of images (sorted by name) or one image, for `predict`
        # Cross-validation (`python -m project cv --folds K` sets both): validate on fold `fold` of `folds`
        # of the images outside the test split, stratified by class; val_fraction is then unused.
        folds: int | None = None,
        fold: int = 0,
    ) -> None:
        super().__init__()
        if not (0 < val_fraction < 1 and 0 <= test_fraction < 1 and val_fraction + test_fraction < 1):
            raise ValueError(
                f"val_fraction {val_fraction} and test_fraction {test_fraction}: each in [0, 1) (val above 0), their"
                " sum below 1"
            )
        if folds is not None and not 0 <= fold < folds > 1:
            raise ValueError(f"fold {fold} of {folds}: folds must be at least 2, and fold 0 to folds - 1")
        if min(image_size) < 1 or batch_size < 1 or num_workers < 0 or not 0 < min_crop <= 1:
            raise ValueError(
                f"image_size {tuple(image_size)} and batch_size {batch_size} must be positive, num_workers"
                f" {num_workers} at least 0, min_crop {min_crop} in (0, 1]"
            )
        self.save_hyperparameters()
        # Plain ints in a list: loadable with torch.load(weights_only=True) and plain YAML in hparams.yaml.
        self.hparams.image_size = [int(size) for size in image_size]
        self.mean = self.std = None  # (C, 1, 1) train-split statistics, set by setup("fit")
        self.splits: dict[str, torch.Tensor] = {}  # name -> indices into the file list
        self.predict_files: list[str] = []  # the files `predict` read, in the order of its outputs
        self._train_loader: StatefulDataLoader | None = None
        self._resume_state: dict | None = None
        self.read: str | None = None  # the fingerprint of the file list, set by setup()

    # Read when the model is built, before setup(): the class names are a directory listing (or the CSV) away.
    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def classes(self) -> list[str]:
        return self._listing[2]

    @property
    def sample_shape(self) -> tuple[int, int, int]:
        return (self.hparams.channels, *self.hparams.image_size)

    @cached_property
    def _listing(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Paths as one NumPy array of bytes and labels as int64: workers forked from this process share them,
        where a list of str would be copied into each worker page by page as reference counts are touched."""
        root = Path(self.hparams.root)
        if not root.exists():
            raise UsageError(f"{root}: no such folder or file (the root of class folders, or a CSV of path,label)")
        files, classes = read_csv(root) if root.is_file() else read_folder(root)
        paths = np.array([os.fsencode(path) for path, _ in files])
        return paths, np.array([label for _, label in files], dtype=np.int64), classes

    def _files(self, indices: torch.Tensor, train: bool = False) -> ImageFiles:
        paths, labels, _ = self._listing
        return ImageFiles(paths[indices.numpy()], labels[indices.numpy()], self._transform(train), self._mode)

    @property
    def _mode(self) -> ImageReadMode:
        return ImageReadMode.GRAY if self.hparams.channels == 1 else ImageReadMode.RGB

    def _transform(self, train: bool) -> v2.Transform:
        # Resized while uint8 (torchvision's fast path), then scaled to float32 in [0, 1].
        size, min_crop = self.hparams.image_size, self.hparams.min_crop
        steps: list[v2.Transform] = [v2.Resize(size, antialias=True)]
        if train and min_crop < 1:
            steps = [v2.RandomResizedCrop(size, scale=(min_crop, 1.0), antialias=True)]
        if train and self.hparams.flip:
            steps.append(v2.RandomHorizontalFlip())
        return v2.Compose([*steps, v2.ToDtype(torch.float32, scale=True)])

    def setup(self, stage: str) -> None:
        if stage == "predict" and self.hparams.predict_path is not None:  # a folder to predict needs no dataset
            path = Path(self.hparams.predict_path)
            found = sorted(str(f) for f in path.iterdir() if f.suffix.lower() in SUFFIXES) if path.is_dir() else []
            self.predict_files = found or ([str(path)] if path.is_file() else [])
            if not self.predict_files:
                raise UsageError(f"{path}: neither an image nor a folder of images ({', '.join(SUFFIXES)}) to predict")
            refuse_unreadable(self.predict_files)
            return
        if not self.splits:  # called twice (by the CLI, then by the Trainer), and fit then test: done once
            paths, labels, _ = self._listing
            refuse_unreadable(os.fsdecode(path) for path in paths)  # here, not in a worker mid-epoch
            # Each file's path (below the root, so a copy of the folder is the same data), class and size: an image
            # added, removed, moved to another class or replaced by one of another size is other data to a resume.
            root = Path(self.hparams.root)
            root = root.parent if root.is_file() else root
            read = [(os.path.relpath(os.fsdecode(path), root), os.stat(path).st_size) for path in paths]
            self.read = fingerprint(len(read), read, labels, unit="files")
            labels, seed, folds = torch.from_numpy(labels), self.hparams.seed, self.hparams.folds
            self.splits = stratified_split(labels, self.hparams.val_fraction, self.hparams.test_fraction, seed)
            if folds is not None:  # the same test split; train + val cut into folds
                rest = torch.cat([self.splits["val"], self.splits["train"]]).sort().values
                train, val = fold_indices(len(rest), folds, self.hparams.fold, seed, labels=labels[rest])
                self.splits |= {"train": rest[train], "val": rest[val]}
        if stage == "fit" and self.mean is None:
            if len(self.splits["train"]) < self.hparams.batch_size or len(self.splits["val"]) == 0:
                raise UsageError(
                    f"{self.hparams.root}: {len(self.splits['train'])} training and {len(self.splits['val'])}"
                    f" validation images; fit needs a full batch ({self.hparams.batch_size}) and one to validate"
                )
            # The images as the model sees them outside training: resized, not augmented.
            self.mean, self.std = channel_statistics(self._loader(self._files(self.splits["train"])))

    def _loader_options(self) -> dict:
        workers = self.hparams.num_workers
        on_cuda = self.trainer is not None and self.trainer.strategy.root_device.type == "cuda"
        return {
            "batch_size": self.hparams.batch_size,
            "num_workers": workers,
            "pin_memory": self.hparams.pin_memory and on_cuda,
            "persistent_workers": self.hparams.persistent_workers and workers > 0,
            # The workers' base seed from a generator of the loader's own, not from the global RNG: building a
            # loader then leaves the training run's random draws (dropout) as they were.
            "generator": torch.Generator().manual_seed(self.hparams.seed),
        }

    def _loader(self, files: ImageFiles) -> DataLoader:
        return DataLoader(files, **self._loader_options())

    def train_dataloader(self) -> StatefulDataLoader:
        trainer = self.trainer
        rank, world = (trainer.global_rank, trainer.world_size) if trainer is not None else (0, 1)
        files = self._files(self.splits["train"], train=True)
        sampler = SeededDrawSampler(files, num_replicas=world, rank=rank, seed=self.hparams.seed)
        # Training drops the ragged last batch: a batch of one breaks BatchNorm, and epochs are reshuffled.
        with warnings.catch_warnings():  # torchdata 0.11 calls torch.set_vital, deprecated in torch 2.14: not ours
            warnings.filterwarnings("ignore", "'set_vital' is deprecated")
            loader = StatefulDataLoader(files, sampler=sampler, drop_last=True, **self._loader_options())
        if self._resume_state is not None:
            sampler.set_epoch(self._resume_state["epoch"])  # before the first batch is drawn (with workers, at iter)
            if "loader" in self._resume_state:
                loader.load_state_dict(self._resume_state["loader"])
            self._resume_state = None
        self._train_loader = loader
        return loader

    # The train loader's position travels in the DataModule's own checkpoint state, which Lightning restores before
    # the loader is built. Lightning restores a loader's own state only if the loader is built after the checkpoint
    # is read, and the model's `estimated_stepping_batches` (configure_optimizers) builds it first: the epoch would
    # be replayed from batch 0.
    def state_dict(self) -> dict:
        loader, trainer = self._train_loader, self.trainer
        if loader is None or trainer is None:
            return {}
        epoch = cast(SeededDrawSampler, loader.sampler).epoch
        # Batches this epoch's training has taken (Lightning's own count; the sampler's runs ahead by what the
        # workers prefetch). Saved after the last one (the epoch's end, or --trainer.limit_train_batches), the next
        # epoch starts at its first batch.
        if trainer.fit_loop.epoch_loop.batch_progress.current.ready >= trainer.num_training_batches:
            return {"epoch": epoch + 1, "data": self.read}
        return {"epoch": epoch, "loader": loader.state_dict(), "data": self.read}

    def load_state_dict(self, state_dict: dict) -> None:
        check_same_data(self, state_dict.get("data"), lambda: self.read, self.hparams.root)
        self._resume_state = {key: value for key, value in state_dict.items() if key != "data"} or None

    def val_dataloader(self) -> DataLoader:
        return self._loader(self._files(self.splits["val"]))

    def test_dataloader(self) -> DataLoader:
        return self._loader(self._files(self.splits["test"]))

    def predict_dataloader(self) -> DataLoader:
        if self.hparams.predict_path is None:
            return self.test_dataloader()
        paths = np.array([os.fsencode(f) for f in self.predict_files])
        return self._loader(ImageFiles(paths, None, self._transform(train=False), self._mode))
