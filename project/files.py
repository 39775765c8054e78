"""Reading labelled or unlabelled 8x8 images from .npy, .npz and .csv files.

Whatever is wrong with a file is refused where it is read, in one line naming the file and the problem: a wrong
shape, no numbers, NaN or infinite pixels, labels that are not class numbers. Nothing is trained on or predicted
from garbage.
"""

import warnings
import zipfile
from pathlib import Path

import numpy as np
import torch

from project.core.errors import UsageError

PIXELS = 64  # 8x8


def load_images(path: Path) -> torch.Tensor:
    """Raw 8x8 digits from .npy, .npz (array `images`) or .csv (64 values a row), as (N, 8, 8) float32 in 0-16."""
    path = _existing(path)
    if path.suffix == ".npz":
        array = _npz(path, ("images",))["images"]
    elif path.suffix == ".npy":
        array = _read(path, lambda: np.load(path, allow_pickle=False))
    elif path.suffix == ".csv":
        array = _csv(path, PIXELS)
    else:
        raise UsageError(f"{path}: unsupported file type {path.suffix!r}; use .npy, .npz or .csv")
    return _as_images(array, path)


def load_labelled(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Images and labels from .npz (arrays `images` and `labels`) or .csv (64 pixel values, then the label).

    A CSV may start with a header row. Labels are the integers 0 to num_classes - 1.
    """
    path = _existing(path)
    if path.suffix == ".npz":
        arrays = _npz(path, ("images", "labels"))
        images, labels = arrays["images"], arrays["labels"]
    elif path.suffix == ".csv":
        rows = _csv(path, PIXELS + 1, "64 pixels, then the label")
        images, labels = rows[:, :PIXELS], rows[:, PIXELS]
    else:
        raise UsageError(f"{path}: unsupported file type {path.suffix!r}; use .npz or .csv")
    images = _as_images(images, path)
    return images, _as_labels(labels, path, len(images))


def _existing(path: Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    return path


def _read(path: Path, read):
    """`read()`, with whatever numpy or zipfile says about a broken file as one line."""
    try:
        return read()
    except UsageError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as error:  # truncated, objects inside, ...
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UsageError(f"{path}: not a readable {path.suffix} file ({reason})") from None


def _npz(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    def read():
        with np.load(path, allow_pickle=False) as archive:
            missing = set(names) - set(archive.files)
            if missing:
                raise UsageError(f"{path}: no array named {', '.join(sorted(missing))} (found {archive.files})")
            return {name: archive[name] for name in names}

    return _read(path, read)


def _csv(path: Path, columns: int, meaning: str = "64 pixels") -> np.ndarray:
    """Rows of `columns` numbers, after an optional header row."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns "input contained no data": said below, in one line
        rows = _read(path, lambda: np.loadtxt(path, delimiter=",", ndmin=2, skiprows=int(_has_header(path))))
    if rows.size == 0:
        raise UsageError(f"{path}: no images in the file")
    if rows.shape[1] != columns:
        raise UsageError(f"{path}: expected {columns} columns ({meaning}), got {rows.shape[1]}")
    return rows


def _has_header(path: Path) -> bool:
    with path.open(errors="replace") as file:
        first = file.readline().split(",")[0]
    try:
        float(first)
    except ValueError:
        return True
    return False


def _as_images(array: np.ndarray, path: Path) -> torch.Tensor:
    if not _numeric(array):
        raise UsageError(f"{path}: expected pixel values as numbers, got {array.dtype}")
    if array.ndim not in (2, 3) or array.shape[1:] not in ((8, 8), (PIXELS,)) or len(array) == 0:
        raise UsageError(f"{path}: expected N images of 8x8 pixels, shape (N, 8, 8) or (N, 64), got {array.shape}")
    images = torch.as_tensor(np.asarray(array, dtype=np.float32)).reshape(-1, 8, 8)  # beyond float32: infinite
    finite = torch.isfinite(images).flatten(1).all(dim=1)
    if not finite.all():
        bad = (~finite).nonzero().flatten()
        raise UsageError(f"{path}: {len(bad)} images hold NaN or infinite pixels (the first: image {bad[0].item()})")
    return images


def _as_labels(labels: np.ndarray, path: Path, n_images: int) -> torch.Tensor:
    labels = np.asarray(labels).reshape(-1)
    if len(labels) != n_images:
        raise UsageError(f"{path}: {n_images} images but {len(labels)} labels")
    integral = _numeric(labels) and np.isfinite(labels).all() and np.array_equal(labels, np.round(labels))
    if not integral or labels.min() < 0:
        raise UsageError(f"{path}: labels must be the integers 0, 1, 2, ... (one per image)")
    # The network gets one output per class: a label of 1e9 asked for a 512 GB output layer. More classes than
    # images cannot all be learnt, so such labels are no class numbers.
    if labels.max() >= n_images:
        raise UsageError(
            f"{path}: label {labels.max():.0f} would make {labels.max() + 1:.0f} classes for {n_images} images;"
            " labels must number the classes 0, 1, 2, ..."
        )
    return torch.as_tensor(labels.astype(np.int64))


def _numeric(array: np.ndarray) -> bool:
    return array.dtype.kind in "biuf"  # booleans, integers, floats: not objects, strings or complex numbers
