"""PredictionWriter: what `predict_step` returns, one row per input, in the inputs' order, in the run folder.

    Trainer(callbacks=[PredictionWriter("predictions.csv")])

The columns follow what the module returns, never its values: a tensor (N,) is the column `output`, (N, K) with K up to
MAX_COLUMNS the columns `output_0` .. `output_{K-1}`, a larger one ((N, C, H, W) masks, (N, 512) embeddings) an array
in `<stem>.npy`; a dict names its entries (`label`, `probability`, arrays in `<stem>.npz`), a tuple numbers them. Every
output of a batch must have one row per input of that batch (the batch's size, as Lightning counts it), and the same
shape in every batch; else one line and nothing is written. Files are written whole, under new names (predictions-1.csv
beside an earlier predictions.csv), once every row is known.
"""

import csv
import io
import signal
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from lightning.pytorch.callbacks import BasePredictionWriter
from lightning.pytorch.utilities.data import extract_batch_size

from lightning_runs.atomic import write_atomically
from lightning_runs.console import say
from lightning_runs.distributed import gather_rows
from lightning_runs.errors import Stopped, Terminated, UsageError
from lightning_runs.run_folders import run_folder
from lightning_runs.signals import sigterm_held

MAX_COLUMNS = 16  # a CSV row stays readable; more values a sample are data for a program: exact in .npy/.npz
SIBLINGS = (".csv", ".npy", ".npz")


class PredictionWriter(BasePredictionWriter):
    def __init__(self, filename: str = "predictions.csv") -> None:
        super().__init__(write_interval="batch")
        if Path(filename).suffix != ".csv" or Path(filename).name != filename or filename.startswith("."):
            raise UsageError(f"PredictionWriter: filename {filename!r} must be a file name ending in .csv")
        self.filename = filename

    def on_predict_epoch_start(self, trainer, pl_module) -> None:
        self._batches: list[dict[str, torch.Tensor]] = []
        self._refused: UsageError | None = None

    def write_on_batch_end(self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx=0):
        if self._refused is not None:
            return
        try:  # said once every rank has predicted: a rank that raised alone would leave the others in the gather
            named, inputs = _named(prediction), extract_batch_size(batch)
            for name, tensor in named.items():
                if tensor.ndim == 0 or len(tensor) != inputs:
                    rows = "a scalar" if tensor.ndim == 0 else f"{len(tensor)} rows"
                    raise UsageError(
                        f"predict_step returned {rows} of {name or 'its output'} for a batch of {inputs} inputs;"
                        " return one row per input"
                    )
            first = self._batches[0] if self._batches else named
            if named.keys() != first.keys() or any(t.shape[1:] != first[n].shape[1:] for n, t in named.items()):
                raise UsageError(f"predict_step returned outputs of other names or shapes in batch {batch_idx}")
        except UsageError as error:
            self._refused = error
            return
        self._batches.append({name: _writable(t.detach()).cpu() for name, t in named.items()})

    def on_predict_epoch_end(self, trainer, pl_module) -> None:
        refused = torch.cat(gather_rows(torch.tensor([[float(self._refused is not None)]], device=pl_module.device)))
        if refused.any():  # every rank raises the first refusing rank's line, which rank zero says
            raise UsageError(trainer.strategy.broadcast(str(self._refused), src=int(refused.flatten().nonzero()[0])))
        if len(trainer.num_predict_batches) > 1:
            raise UsageError(
                "PredictionWriter writes the predictions of one DataLoader; predict_dataloader gave several"
            )
        outputs = {name: _in_input_order(torch.cat([b[name] for b in self._batches]), pl_module.device)
                   for name in (self._batches[0] if self._batches else {})}  # fmt: skip
        if not trainer.is_global_zero or not outputs:
            return
        columns, arrays = _columns(outputs)
        folder = run_folder(trainer) or Path(trainer.default_root_dir)
        suffix = ".npy" if list(arrays) == [""] else ".npz"
        stem, n = Path(self.filename).stem, 0
        while any((folder / f"{stem}{s}").exists() for s in SIBLINGS):  # no pair of an earlier predict, nor half of one
            n, stem = n + 1, f"{Path(self.filename).stem}-{n + 1}"
        written = [folder / f"{stem}.csv"] + ([folder / f"{stem}{suffix}"] if arrays else [])
        text = io.StringIO(newline="")
        rows = len(next(iter(outputs.values())))
        csv.writer(text).writerows([["index", *columns], *zip(range(rows), *columns.values(), strict=True)])
        try:
            with sigterm_held():  # both files or neither, and said once written, even where a SIGTERM comes meanwhile
                if arrays:
                    save = (lambda f: np.save(f, arrays[""])) if suffix == ".npy" else (lambda f: np.savez(f, **arrays))  # ty: ignore[invalid-argument-type]  # numpy's stub matches **arrays to allow_pickle
                    write_atomically(written[1], save)
                write_atomically(written[0], text.getvalue())
                self._said = f"Wrote {rows} predictions to {' and '.join(map(str, written))}"
        except Terminated:  # a stop once its output is whole: kept, as a fit's checkpoint is
            raise Stopped(signal.SIGTERM, "stopped by SIGTERM once the predictions were written") from None

    def teardown(self, trainer, pl_module, stage: str) -> None:
        if said := getattr(self, "_said", None):  # after the progress bar has closed its line
            say(said)
            self._said = None

    def on_exception(self, trainer, pl_module, exception) -> None:
        self.teardown(trainer, pl_module, "predict")  # a stop after the files were written still says so


def _named(output) -> dict[str, torch.Tensor]:
    """One batch's output as name -> (R, ...): "" for a tensor returned itself, a dict's keys, `output_i` of a tuple."""
    named = {}
    if isinstance(output, torch.Tensor):
        named = {"": output}
    elif isinstance(output, Mapping) and all(isinstance(key, str) and key for key in output):
        named = dict(output)
    elif isinstance(output, tuple | list):
        named = {f"output_{i}": value for i, value in enumerate(output)}
    if not named or not all(isinstance(v, torch.Tensor) and not v.is_complex() for v in named.values()):
        raise UsageError(
            f"predict_step returned {type(output).__name__}: PredictionWriter takes a tensor with one row per input,"
            " or a dict, tuple or list of them"
        )
    return named


def _writable(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.is_floating_point() and tensor.element_size() < 4:
        return tensor.float()  # bfloat16/half (16-mixed): numpy has no bfloat16
    return tensor.long() if tensor.dtype == torch.bool else tensor


def _in_input_order(rows: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Every rank's rows (R_r, ...), interleaved back into input order: under DDP rank r predicts the samples r, r + W,
    ... (Lightning's own predict sampler, and the library's ShardSampler). Collective: every rank calls it."""
    shards = [shard.cpu() for shard in gather_rows(rows.to(device))]
    whole = torch.empty(sum(map(len, shards)), *rows.shape[1:], dtype=rows.dtype)
    for rank, shard in enumerate(shards):
        whole[rank :: len(shards)] = shard
    return whole


def _columns(outputs: dict[str, torch.Tensor]) -> tuple[dict[str, list], dict[str, np.ndarray]]:
    columns, arrays = {}, {}
    for name, tensor in outputs.items():
        if tensor.ndim == 1:
            group = {name or "output": tensor.tolist()}
        elif tensor.ndim == 2 and tensor.shape[1] <= MAX_COLUMNS:
            group = {f"{name or 'output'}_{j}": tensor[:, j].tolist() for j in range(tensor.shape[1])}
        else:
            arrays[name] = tensor.numpy()
            continue
        if clash := ({"index", *columns} & group.keys()):
            raise UsageError(f"predict_step's outputs would write two columns named {sorted(clash)[0]}: rename one")
        columns |= group
    return columns, arrays
