"""Reading labelled or unlabelled samples of any shape from .npy, .npz and .csv files.

Whatever is wrong with a file is refused where it is read, in one line naming the file and the problem: a wrong
shape, no numbers, NaN or infinite values, labels that are not class numbers. Nothing is trained on or predicted
from garbage; a labelled sample repeated is kept once.
"""

import itertools
import math
import warnings
import zipfile
from pathlib import Path

import numpy as np
import torch

from lightning_runs.console import say
from lightning_runs.errors import UsageError, first_line

# Rows of a data file, read no further: every sample is held in memory as float32 and split here; a larger data set
# wants a DataModule that streams it (docs/making-it-yours.md).
MAX_ROWS = 10_000_000
# Classes of a labelled file: the network gets one output per class, the metrics a (C,) or (C, C) state.
MAX_CLASSES = 100_000

# The array names a .npz holds: `samples` (or `images`, the name the first version of this template read) and `labels`.
SAMPLES, OLD_SAMPLES, LABELS = "samples", "images", "labels"


def load_samples(path: Path, shape: tuple[int, ...] | None = None) -> torch.Tensor:
    """Samples to predict from .npy, .npz (array `samples`) or .csv (one sample a row), as (N, *shape) float32.

    `shape`: the shape of one sample the model takes; rows of as many values (a CSV's) are reshaped to it.
    """
    path = _existing(path)
    if path.suffix == ".npz":
        array = _samples_of(_npz(path, (SAMPLES,)), path)
    elif path.suffix == ".npy":
        array = _read(path, lambda: _npy(path))
    elif path.suffix == ".csv":
        array = _csv(path)
    else:
        raise UsageError(f"{path}: unsupported file type {path.suffix!r}; use .npy, .npz or .csv")
    return _as_samples(array, path, shape)


def load_labelled(path: Path, shape: tuple[int, ...] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Samples and labels from .npz (arrays `samples` and `labels`) or .csv (a sample's values, then its label).

    A CSV may start with a header row (one with a cell that is not a number); its width gives the feature count.
    Labels are the integers 0 to num_classes - 1. `shape`: as for `load_samples`.
    """
    path = _existing(path)
    if path.suffix == ".npz":
        arrays = _npz(path, (SAMPLES, LABELS))
        samples, labels = _samples_of(arrays, path), arrays[LABELS]
    elif path.suffix == ".csv":
        rows = _csv(path, "a sample's values, then its label")
        if rows.shape[1] < 2:
            raise UsageError(f"{path}: expected a sample's values, then its label, on each row; got 1 column")
        samples, labels = rows[:, :-1], rows[:, -1]
    else:
        raise UsageError(f"{path}: unsupported file type {path.suffix!r}; use .npz or .csv")
    samples = _as_samples(samples, path, shape)
    return _each_once(samples, _as_labels(labels, path, len(samples)), path)


def _each_once(samples: torch.Tensor, labels: torch.Tensor, path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """A sample repeated (its values and label) is kept once, in its first row, said in one line: its copies would
    land in train and test alike, and the test would score samples the model trained on."""
    rows = np.concatenate([samples.flatten(1).numpy(), labels[:, None].numpy().astype(np.float32)], axis=1)
    first = np.sort(np.unique(rows, axis=0, return_index=True)[1])
    if len(first) < len(rows):
        say(f"{path}: {len(rows) - len(first)} repeated samples (the same values and label) kept once each")
        samples, labels = samples[first], labels[first]
    return samples, labels


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
        reason = first_line(error)
        raise UsageError(f"{path}: not a readable {path.suffix} file ({reason})") from None


def _npz(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    def read():
        with zipfile.ZipFile(path) as members:
            for member in members.infolist():
                with members.open(member) as file:
                    _check_header(file, member.file_size, path, f"the header of its {member.filename}")
        with np.load(path, allow_pickle=False) as archive:
            found = set(archive.files) | ({SAMPLES} if OLD_SAMPLES in archive.files else set())
            missing = set(names) - found
            if missing:
                raise UsageError(f"{path}: no array named {', '.join(sorted(missing))} (found {archive.files})")
            return {name: archive[name] for name in archive.files if name in (*names, OLD_SAMPLES)}

    return _read(path, read)


def _npy(path: Path) -> np.ndarray:
    with path.open("rb") as file:
        _check_header(file, path.stat().st_size, path)
    return np.load(path, allow_pickle=False)


def _check_header(file, size: int, path: Path, header: str = "its header") -> None:
    """The array a .npy header describes fits in the bytes after it: numpy allocates what the header claims before
    it reads, and a 640-byte file claiming shape (1000000000, 8, 8) asked for 238 GiB."""
    if file.read(6) != np.lib.format.MAGIC_PREFIX:  # not an array: np.load says what it is
        return
    file.seek(0)
    version = np.lib.format.read_magic(file)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = read_header(file)
    claimed, held = math.prod(shape) * dtype.itemsize, size - file.tell()
    if claimed > held:
        raise UsageError(
            f"{path}: {header} claims an array of shape {shape} ({dtype}, {claimed:,} bytes) but only"
            f" {held:,} bytes follow it; the file is truncated or not written by numpy"
        )


def _samples_of(arrays: dict[str, np.ndarray], path: Path) -> np.ndarray:
    return arrays[SAMPLES] if SAMPLES in arrays else arrays[OLD_SAMPLES]


def _csv(path: Path, meaning: str = "one sample a row") -> np.ndarray:
    """Rows of numbers, all of one width, after an optional header row (`_is_header`), at most MAX_ROWS of them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns "input contained no data": said below, in one line
        rows = _read(path, lambda: _rows(path))
    if rows.size == 0:
        raise UsageError(f"{path}: no rows of numbers in the file ({meaning})")
    if len(rows) > MAX_ROWS:
        raise UsageError(f"{path}: more than {MAX_ROWS:,} rows, the most a file may hold (MAX_ROWS in files.py)")
    return rows


def _rows(path: Path) -> np.ndarray:
    # utf-8-sig: a byte order mark (Excel writes one) is not part of the first cell.
    with path.open(encoding="utf-8-sig", newline="") as file:
        first = file.readline()
        lines = itertools.chain([] if _is_header(first) else [first], file)
        return np.loadtxt(lines, delimiter=",", ndmin=2, max_rows=MAX_ROWS + 1)


def _is_header(line: str) -> bool:
    """A header names its columns: some cell is text, not a number. A first row of numbers with an empty cell is
    data (and refused as such, naming the cell), never skipped as a header: that lost a sample silently."""
    cells = [cell.strip() for cell in line.split(",")]
    return any(cell and not _is_number(cell) for cell in cells)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _as_samples(array: np.ndarray, path: Path, shape: tuple[int, ...] | None) -> torch.Tensor:
    """(N, *shape) float32; flat rows of math.prod(shape) values are reshaped to `shape`."""
    if not _numeric(array):
        raise UsageError(f"{path}: expected values as numbers, got {array.dtype}")
    if array.ndim < 2 or len(array) == 0:
        raise UsageError(f"{path}: expected N samples, an array of shape (N, ...), got {array.shape}")
    if shape is not None and tuple(array.shape[1:]) != tuple(shape):
        if array.ndim != 2 or array.shape[1] != math.prod(shape):
            raise UsageError(
                f"{path}: samples of shape {tuple(array.shape[1:])}, expected {tuple(shape)}"
                f" (or {math.prod(shape)} values a row); the file holds an array of shape {array.shape}"
            )
        array = array.reshape(len(array), *shape)
    samples = torch.as_tensor(np.asarray(array, dtype=np.float32))  # beyond float32: infinite, refused below
    finite = torch.isfinite(samples).flatten(1).all(dim=1)
    if not finite.all():
        bad = (~finite).nonzero().flatten()
        raise UsageError(f"{path}: {len(bad)} samples hold NaN or infinite values (the first: sample {bad[0].item()})")
    return samples


def _as_labels(labels: np.ndarray, path: Path, n_samples: int) -> torch.Tensor:
    labels = np.asarray(labels).reshape(-1)
    if len(labels) != n_samples:
        raise UsageError(f"{path}: {n_samples} samples but {len(labels)} labels")
    integral = _numeric(labels) and np.isfinite(labels).all() and np.array_equal(labels, np.round(labels))
    if not integral or labels.min() < 0:
        raise UsageError(f"{path}: labels must be the integers 0, 1, 2, ... (one per sample)")
    # The network gets one output per class: a label of 1e9 asked for a 512 GB output layer. More classes than
    # samples cannot all be learnt, so such labels are no class numbers.
    if labels.max() >= n_samples:
        raise UsageError(
            f"{path}: label {labels.max():.0f} would make {labels.max() + 1:.0f} classes for {n_samples} samples;"
            " labels must number the classes 0, 1, 2, ..."
        )
    if labels.max() >= MAX_CLASSES:
        raise UsageError(
            f"{path}: label {labels.max():.0f} would make more than {MAX_CLASSES:,} classes, the most accepted"
            " (lightning_runs/limits.py)"
        )
    return torch.as_tensor(labels.astype(np.int64))


def _numeric(array: np.ndarray) -> bool:
    return array.dtype.kind in "biuf"  # booleans, integers, floats: not objects, strings or complex numbers
