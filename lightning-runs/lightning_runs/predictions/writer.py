"""`predictions.csv` in the run directory: what `predict` writes, one row per input, in the input's order, and beside it
`predictions.npy` (or `.npz`) for outputs too large for a row. What becomes which column or array: columns.py."""

import csv
import io
import zlib
from pathlib import Path

import numpy as np
import torch
from lightning.pytorch.callbacks import BasePredictionWriter

from lightning_runs.atomic import write_atomically
from lightning_runs.console import say
from lightning_runs.distributed import gather_rows
from lightning_runs.errors import UsageError
from lightning_runs.folders.layout import free_path, run_folder
from lightning_runs.predictions.columns import Table, by_name, table


class PredictionWriter(BasePredictionWriter):
    """Writes whatever `predict_step` returns (columns.py says how) into the run directory: `predictions.csv`, an
    `index` column and one column group per small output ((N,) values, (N, K) outputs, the label and probability of
    class probabilities), and `predictions.npy`/`.npz` for large ones ((N, C, H, W), (N, 512)), rows in input order.

    An existing file is never overwritten: the next free `predictions-N.csv` (and `predictions-N.npy`) is used instead.
    Under DDP, rank zero writes one file for the whole set. An output it cannot write is refused in one line
    (UsageError) and nothing is written: the files are written, atomically, only once every row is known.
    """

    def __init__(self, filename: str = "predictions.csv") -> None:
        super().__init__(write_interval="epoch")
        self.filename = filename
        self._written = None  # the line saying what was written, for teardown

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices) -> None:
        if len(trainer.num_predict_batches) > 1:  # then `predictions` is one list per DataLoader
            if trainer.is_global_zero:
                raise UsageError("predict writes the predictions of one DataLoader; predict_dataloader gave several")
            return
        outputs = _in_input_order(predictions, pl_module.device)
        # Every rank now holds every row and reaches the same verdict; rank zero says it and writes, alone.
        if not trainer.is_global_zero:
            return
        if isinstance(outputs, UsageError):
            raise outputs
        written = table(outputs)
        path = free_path((run_folder(trainer) or Path(trainer.default_root_dir)) / self.filename, *_suffix(written))
        paths = [path, *(path.with_suffix(suffix) for suffix in _suffix(written))]
        if written.arrays:
            write_atomically(paths[1], lambda file: _save_arrays(file, written.arrays))
        write_atomically(path, _csv(written))
        self._written = f"Wrote {written.rows} predictions to {' and '.join(map(str, paths))}"

    def teardown(self, trainer, pl_module, stage: str) -> None:
        # Said here, after the progress bar has closed its line (at on_predict_end), not glued to its end.
        if self._written is not None:
            say(self._written)
            self._written = None


def _in_input_order(predictions: list, device: torch.device) -> dict[str, torch.Tensor] | UsageError:
    """Every rank's outputs, name -> (N, ...) in input order, or why they cannot be written: the same answer on every
    rank. Collective under DDP: every rank calls it, and makes the same gathers in the same order."""
    try:
        mine, refused = by_name(predictions), None  # name -> (R_r, ...)
    except UsageError as error:
        mine, refused = {}, error
    # First whether every rank has outputs of the same names, dtypes and ranks: otherwise the gathers would not match.
    kinds = repr([(name, str(t.dtype), t.ndim) for name, t in mine.items()]).encode()
    verdicts = torch.cat(gather_rows(torch.tensor([[int(refused is not None), zlib.crc32(kinds)]], device=device)))
    if verdicts[:, 0].any() or (verdicts[:, 1] != verdicts[0, 1]).any():
        return refused or UsageError("predict_step returned outputs of other names, dtypes or shapes on other ranks")
    whole = {}
    for name, rows in mine.items():
        # ShardSampler (and Lightning's own predict sampler) gives rank r the samples r, r + W, ...: row j of rank r is
        # sample j * W + r.
        shards = [shard.cpu() for shard in gather_rows(rows.to(device))]  # W x (R_r, ...)
        whole[name] = torch.empty(sum(map(len, shards)), *shards[0].shape[1:], dtype=shards[0].dtype)  # (N, ...)
        for rank, shard in enumerate(shards):
            if shard.shape[1:] != shards[0].shape[1:] or len(whole[name][rank :: len(shards)]) != len(shard):
                counts = ", ".join(f"{tuple(s.shape)}" for s in shards)
                return UsageError(f"predict_step returned outputs that do not interleave across ranks: {counts}")
            whole[name][rank :: len(shards)] = shard
    return whole


def _suffix(written: Table) -> list[str]:
    """The suffix of the file beside the CSV: .npy for the tensor itself, .npz for a dict's or a tuple's; or none."""
    if not written.arrays:
        return []
    return [".npy" if list(written.arrays) == [""] else ".npz"]


def _save_arrays(file, arrays: dict[str, np.ndarray]) -> None:
    if list(arrays) == [""]:
        np.save(file, arrays[""])
    else:
        np.savez(file, **arrays)


def _csv(written: Table) -> str:
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(["index", *written.columns])
    writer.writerows(zip(range(written.rows), *written.columns.values(), strict=True))
    return text.getvalue()
