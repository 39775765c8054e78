"""Reading labelled or unlabelled 8x8 images from .npy, .npz and .csv files, with a clear error for anything else."""

from pathlib import Path

import numpy as np
import torch


def load_images(path: Path) -> torch.Tensor:
    """Raw 8x8 digits from .npy, .npz (array `images`) or .csv (64 values a row), as (N, 8, 8) float32 in 0-16."""
    path = Path(path)
    if path.suffix == ".npz":
        with np.load(path) as archive:
            array = archive["images"]
    elif path.suffix == ".npy":
        array = np.load(path, allow_pickle=False)
    elif path.suffix == ".csv":
        array = np.loadtxt(path, delimiter=",", dtype=np.float32, ndmin=2)
    else:
        raise ValueError(f"{path}: unsupported file type {path.suffix!r}; use .npy, .npz or .csv")
    return _as_images(array, path)


def load_labelled(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Images and labels from .npz (arrays `images` and `labels`) or .csv (64 pixel values, then the label).

    A CSV may start with a header row. Labels are the integers 0 to num_classes - 1.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    if path.suffix == ".npz":
        with np.load(path) as archive:
            missing = {"images", "labels"} - set(archive.files)
            if missing:
                raise ValueError(f"{path}: no array named {', '.join(sorted(missing))} (found {archive.files})")
            images, labels = archive["images"], archive["labels"]
    elif path.suffix == ".csv":
        rows = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2, skiprows=int(_has_header(path)))
        if rows.shape[1] != 65:
            raise ValueError(f"{path}: expected 65 columns (64 pixels, then the label), got {rows.shape[1]}")
        images, labels = rows[:, :64], rows[:, 64]
    else:
        raise ValueError(f"{path}: unsupported file type {path.suffix!r}; use .npz or .csv")
    labels = np.asarray(labels).reshape(-1)
    if labels.size == 0 or labels.min() < 0 or not np.array_equal(labels, labels.astype(np.int64)):
        raise ValueError(f"{path}: labels must be the integers 0, 1, 2, ... (one per image)")
    images = _as_images(images, path)
    if len(images) != len(labels):
        raise ValueError(f"{path}: {len(images)} images but {len(labels)} labels")
    return images, torch.as_tensor(labels.astype(np.int64))


def _has_header(path: Path) -> bool:
    with path.open() as file:
        first = file.readline().split(",")[0]
    try:
        float(first)
    except ValueError:
        return True
    return False


def _as_images(array: np.ndarray, path: Path) -> torch.Tensor:
    if array.size % 64 or array.ndim not in (2, 3):
        raise ValueError(f"{path}: expected N images of 8x8 (or 64 values each), got shape {array.shape}")
    return torch.as_tensor(array, dtype=torch.float32).reshape(-1, 8, 8)
