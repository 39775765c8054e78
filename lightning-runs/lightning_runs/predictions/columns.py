"""What `predict_step` returned, described by its shapes as CSV columns and arrays: writer.py writes them.

Accepted, the same kind and shapes in every batch, with one row per sample:
- a tensor (N,): one column, `value` (`label` for integers and booleans);
- a tensor (N, K) of at most MAX_COLUMNS values a sample: `output_0` .. `output_{K-1}`; class probabilities (K >= 2,
  every row non-negative and summing to 1) instead give `label, probability`: the most probable class and its
  probability, whatever K;
- a larger tensor ((N, C, H, W) masks, (N, 512) embeddings): an array in a .npy file beside the CSV;
- a dict of such tensors: one column group (or array) each, named by its key (`key`, `key_0` .., `key_label` and
  `key_probability`), the arrays in one .npz; a tuple or a list: the same, the keys `output_0`, `output_1`, ...
Anything else is refused in one line (UsageError) saying what came and what is accepted.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from lightning_runs.errors import UsageError

# Up to 16 values a sample, a CSV row stays readable (a screen wide, a spreadsheet's columns); more (an embedding, a
# mask) is data for a program, kept exact and compact in .npy/.npz.
MAX_COLUMNS = 16
# Rows of class probabilities sum to 1 within this: a softmax rounded to bfloat16 (16-mixed) keeps 8 bits of mantissa,
# ~0.4% per value; other outputs (logits, embeddings) practically never have every row summing this close to 1.
PROBABILITY_TOLERANCE = 1e-2
ACCEPTED = (
    "predict writes a tensor with one row per sample ((N,), (N, K), (N, C, H, W), ...) or a dict, tuple or list of"
    " them, of the same shapes in every batch"
)


@dataclass
class Table:
    rows: int  # N
    columns: dict[str, list] = field(default_factory=dict)  # CSV column name -> N values, after `index`
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # "" for the tensor itself (.npy), else keys (.npz)


def by_name(predictions: list) -> dict[str, torch.Tensor]:
    """Every batch's outputs joined per name into (R, ...) tensors of writable dtypes: "" names a tensor returned
    itself, a key a dict's entry, `output_i` a tuple's or list's i-th. The rows stay in the batches' order."""
    if not predictions:
        raise UsageError("predict had no batches to run predict_step on: give it samples to predict")
    batches = [_named(output, batch) for batch, output in enumerate(predictions)]
    first = batches[0]
    for batch, named in enumerate(batches):
        if named.keys() != first.keys():
            raise _refused(f"outputs named {_keys(first)} for batch 0 and {_keys(named)} for batch {batch}")
        for name, tensor in named.items():
            if tensor.shape[1:] != first[name].shape[1:] or tensor.dtype != first[name].dtype:
                was, now = _kind(first[name], "N"), _kind(tensor, "N")
                raise _refused(f"{_called(name)}{was} for batch 0 and {now} for batch {batch}")
    return {name: torch.cat([named[name] for named in batches]) for name in first}


def table(outputs: dict[str, torch.Tensor]) -> Table:
    """The CSV columns and the arrays that say `outputs` (name -> (N, ...), in input order)."""
    written = Table(rows=len(next(iter(outputs.values()))))
    for name, tensor in outputs.items():
        if _probabilities(tensor):
            confidence, labels = tensor.max(dim=-1)  # (N,) each: the most probable class, the first of ties
            group = {_column(name, "label"): labels.tolist(), _column(name, "probability"): confidence.tolist()}
        elif tensor.ndim == 1:
            group = {name or ("value" if tensor.is_floating_point() else "label"): tensor.tolist()}
        elif tensor.ndim == 2 and tensor.shape[1] <= MAX_COLUMNS:
            group = {_column(name or "output", str(j)): tensor[:, j].tolist() for j in range(tensor.shape[1])}
        else:
            written.arrays[name] = tensor.numpy()
            continue
        if clash := ({"index", *written.columns} & group.keys()):
            raise UsageError(f"predict_step's outputs would write two columns named {sorted(clash)[0]}: rename one")
        written.columns.update(group)
    return written


def _named(output, batch: int) -> dict[str, torch.Tensor]:
    """One batch's output as name -> (R, ...) tensor."""
    if isinstance(output, torch.Tensor):
        named = {"": output}
    elif isinstance(output, Mapping) and output and all(isinstance(key, str) and key for key in output):
        named = dict(output)
    elif isinstance(output, (tuple, list)) and output and all(isinstance(value, torch.Tensor) for value in output):
        named = {f"output_{i}": value for i, value in enumerate(output)}
    else:
        raise _refused(f"{_kind(output)} for batch {batch}")
    rows = None
    for name, tensor in named.items():
        if not isinstance(tensor, torch.Tensor) or tensor.ndim == 0 or tensor.is_complex():
            raise _refused(f"{_called(name)}{_kind(tensor)} for batch {batch}")
        if rows is not None and len(tensor) != rows:
            raise _refused(f"{rows} rows and {len(tensor)} rows of {_called(name).strip()} for batch {batch}")
        rows = len(tensor)
        named[name] = _writable(tensor.detach())
    return named


def _writable(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.is_floating_point() and tensor.element_size() < 4:
        return tensor.float()  # bfloat16/half (16-mixed): numpy has no bfloat16, and a CSV writes floats anyway
    return tensor.long() if tensor.dtype == torch.bool else tensor


def _probabilities(tensor: torch.Tensor) -> bool:
    """Whether `tensor` (N, K) holds class probabilities: decided from the values themselves, never assumed."""
    if tensor.ndim != 2 or tensor.shape[1] < 2 or not tensor.is_floating_point() or not len(tensor):
        return False
    values = tensor.double()
    if not (values.isfinite().all() and (values >= 0).all()):
        return False
    return bool(((values.sum(dim=1) - 1).abs() <= PROBABILITY_TOLERANCE).all())


def _column(name: str, part: str) -> str:
    return f"{name}_{part}" if name else part


def _called(name: str) -> str:
    return f"`{name}` as " if name else ""


def _keys(named: dict) -> str:
    return "(" + ", ".join(named) + ")" if any(named) else "(a tensor)"


def _kind(value, rows: str | None = None) -> str:
    """What `value` is, in a few words: `a tensor of shape (N, 3), float32`, `None`, `a str`, `a list of 2 str`."""
    if isinstance(value, torch.Tensor):
        shape = tuple(value.shape) if rows is None else (rows, *value.shape[1:])
        dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
        return f"a tensor of shape ({dims}), {str(value.dtype).removeprefix('torch.')}"
    if value is None:
        return "None"
    if isinstance(value, (tuple, list, Mapping)) and value:
        items = list(value.values() if isinstance(value, Mapping) else value)
        inner = {type(item).__name__ for item in items}
        return f"a {type(value).__name__} of {len(items)} {'/'.join(sorted(inner))}"
    empty = "empty " if isinstance(value, (tuple, list, Mapping)) else ""
    word = empty + type(value).__name__
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _refused(what: str) -> UsageError:
    return UsageError(f"predict_step returned {what}; {ACCEPTED}")
