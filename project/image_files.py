"""The parts of images.py that know nothing of Lightning: the image files listed and checked, as a Dataset, the
training sampler that makes each draw's augmentation a function of its seed, the stratified split, and the streamed
statistics."""

import csv
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset
from torchdata.stateful_dataloader.sampler import StatefulDistributedSampler
from torchvision.io import ImageReadMode, decode_image

from lightning_runs.errors import UsageError, first_line

SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")  # what decode_image reads as one still image


def read_folder(root: Path) -> tuple[list[tuple[str, int]], list[str]]:
    """(path, label) of every image under root/<class>/, and the sorted class names, in torchvision ImageFolder's
    order. Unlike ImageFolder: a hidden folder (`.ipynb_checkpoints/`) is no class and hidden files no images, and
    links to folders inside a class folder are not followed (a link back up listed the data again under that class:
    6,560 files for 160 images)."""
    classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir() and not entry.name.startswith("."))
    if not classes:
        raise UsageError(f"{root}: no class folder in it (root/<class>/<image>), and not a CSV of path,label")
    files = []
    for label, name in enumerate(classes):
        found = []
        for folder, subfolders, names in sorted(os.walk(root / name)):  # followlinks=False: a link is not entered
            subfolders[:] = [sub for sub in subfolders if not sub.startswith(".")]
            found += [os.path.join(folder, f) for f in sorted(names) if f.lower().endswith(SUFFIXES) and f[0] != "."]
        if not found:
            raise UsageError(f"{root / name}: a class folder without images ({', '.join(SUFFIXES)})")
        files += [(path, label) for path in found]
    return files, classes


def read_csv(path: Path) -> tuple[list[tuple[str, int]], list[str]]:
    """(path, label) of every row of a CSV with a `path,label` header; classes are the sorted label names (in
    numeric order where all are integers)."""
    try:
        with path.open(newline="") as file:
            reader = csv.DictReader(file)
            rows = (
                [(row["path"], row["label"]) for row in reader]
                if {"path", "label"} <= set(reader.fieldnames or ())
                else []
            )
    except (UnicodeDecodeError, csv.Error):
        rows = []
    if not rows or any(file is None or label is None for file, label in rows):
        raise UsageError(f"{path}: not a list of images; expected a header row path,label and then one row per image")
    names = sorted({label for _, label in rows}, key=lambda name: (int(name), "") if name.isdigit() else (0, name))
    index = {name: i for i, name in enumerate(names)}
    files = [(str(path.parent / file), index[label]) for file, label in rows]
    for row, (file, _) in enumerate(files, start=2):
        if not os.path.isfile(file):
            raise UsageError(f"{path}, row {row}: {file} is not a file")
    return files, names


def refuse_unreadable(paths: Iterable[str]) -> None:
    """Every file checked as decode_image would read it, from its structure, before any training: one line naming the
    first that is not an image it reads, and how many are not."""
    bad = [(path, why) for path in paths if (why := unreadable(path))]
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise UsageError(f"{bad[0][0]}: not an image decode_image reads ({bad[0][1]}){more}; remove or replace it")


def unreadable(path: str) -> str | None:
    """Why `path` is no still PNG, JPEG or WebP, by Pillow's reading of its header and chunks (~80 us for a small PNG,
    no pixels decoded); None where it is one. A corrupt PNG must be caught here: libpng's error crashes
    decode_image's process (a segmentation fault), and with it the run."""
    from PIL import Image

    try:
        with Image.open(path) as image:  # empty, not an image, a link to nowhere or in a loop, a folder
            if (frames := getattr(image, "n_frames", 1)) > 1:
                return f"an animated {image.format}, {frames} frames"
            kind = image.format
            image.verify()  # a PNG's every chunk against its checksum
        if kind == "JPEG":
            with open(path, "rb") as file:
                file.seek(-2, os.SEEK_END)
                ended = file.read(2) == b"\xff\xd9"
            if not ended:  # cut short, or data after its end marker (which decode_image reads): decoded to tell
                with Image.open(path) as image:
                    image.load()
    except Exception as error:  # Pillow raises OSError, SyntaxError, ValueError or struct.error, by format
        return first_line(error)
    return None


class ImageFiles(Dataset):
    """Images decoded from files as they are asked for: (image, label), or (image,) without labels.

    A key is a position, or (position, seed) from SeededDrawSampler: the transform's random draws then come from
    that seed alone, so a sample is augmented alike whichever worker (or none) decodes it, and a resumed epoch
    augments as the uninterrupted one did (the workers' own RNGs restart on resume)."""

    def __init__(
        self,
        paths: np.ndarray,  # (N,) bytes
        labels: np.ndarray | None,  # (N,) int64
        transform: Callable[[torch.Tensor], torch.Tensor],
        mode: ImageReadMode = ImageReadMode.RGB,
    ) -> None:
        self.paths, self.labels, self.transform, self.mode = paths, labels, transform, mode

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int | tuple[int, int]) -> tuple:
        index, seed = index if isinstance(index, tuple) else (index, None)
        path = os.fsdecode(self.paths[index])
        try:
            image = decode_image(path, mode=self.mode)  # (C, H, W) uint8
        except RuntimeError:
            raise ValueError(f"{path}: not an image decode_image reads (PNG, JPEG or WebP)") from None
        if seed is None:
            image = self.transform(image)
        else:  # transforms.v2 draws from the global CPU generator: seeded here, then put back as it was (without
            # workers it is the training process's own). ~2 us, a third of torch.random.fork_rng's cost.
            generator = torch.random.default_generator
            state = generator.get_state()
            generator.manual_seed(seed)
            try:
                image = self.transform(image)
            finally:
                generator.set_state(state)
        return (image,) if self.labels is None else (image, int(self.labels[index]))


class SeededDrawSampler(StatefulDistributedSampler):
    """This rank's share of a permutation seeded by (seed, epoch), as DistributedSampler draws it, each position
    paired with the seed of its augmentation. Its state (the epoch and the samples drawn) is what StatefulDataLoader
    saves of the order; a DistributedSampler, so Lightning's DDP keeps it rather than replacing it."""

    def __init__(self, dataset: Dataset, num_replicas: int = 1, rank: int = 0, seed: int = 0) -> None:
        # drop_last=False: pads by repeating, so every rank steps equally often.
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        first = (self.seed * 1_000_003 + self.epoch) * len(self.dataset)  # ty: ignore[invalid-argument-type]  # torch's Dataset declares no __len__; ImageFiles has one
        for index in super().__iter__():
            yield index, (first + index) % 2**63

    def state_dict(self) -> dict[str, int]:
        return {**super().state_dict(), "epoch": self.epoch}

    def load_state_dict(self, state_dict: dict[str, int]) -> None:
        super().load_state_dict(state_dict)
        self.epoch = state_dict["epoch"]


def stratified_split(labels: torch.Tensor, val: float, test: float, seed: int) -> dict[str, torch.Tensor]:
    """Indices of val, test and train (the rest): in each class, a seeded shuffle cut at round(n * val) and
    round(n * test), so every split holds the classes in the data's proportions. Each split in file order."""
    perm = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    perm = perm[torch.sort(labels[perm], stable=True).indices]  # grouped by class, shuffled within each
    counts = torch.bincount(labels)  # (K,)
    first = (counts.cumsum(0) - counts).repeat_interleave(counts)  # each sorted position's class start
    rank = torch.arange(len(labels)) - first  # position within its class
    label = labels[perm]
    n_val, n_test = (counts * val).round().long()[label], (counts * test).round().long()[label]
    parts = {"val": rank < n_val, "test": (rank >= n_val) & (rank < n_val + n_test), "train": rank >= n_val + n_test}
    return {name: perm[keep].sort().values for name, keep in parts.items()}


def channel_statistics(batches: Iterable) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and standard deviation, (C, 1, 1) each, of every image of (N, C, H, W) batches, in one
    pass: float64 sums of the values and their squares (exact enough for values in [0, 1]), never more than a batch
    in memory. A constant channel gets a standard deviation of 1, so it is centred rather than divided by zero."""
    total = squares = torch.zeros((), dtype=torch.float64)
    count = 0
    try:
        for images, *_ in batches:
            values = images.double().transpose(0, 1).flatten(1)  # (C, N * H * W)
            sums, sum_squares = values.sum(1), values.square().sum(1)
            total, squares = total + sums, squares + sum_squares
            count += values.shape[1]
    except ValueError as error:  # a worker's: "Caught ValueError in DataLoader worker ... Original Traceback ..."
        raise ValueError(str(error).strip().splitlines()[-1].removeprefix("ValueError: ")) from None
    mean = total / count
    std = ((squares - count * mean.square()) / max(count - 1, 1)).clamp_min(0).sqrt()
    std = torch.where(std > 1e-6, std, torch.ones_like(std))  # below a 255th of a step: constant
    return mean.float().view(-1, 1, 1), std.float().view(-1, 1, 1)
