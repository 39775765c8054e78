"""`predictions.csv` in the run directory: what `predict` writes, one row per input, in the input's order."""

import csv
from pathlib import Path

import torch
from lightning.pytorch.callbacks import BasePredictionWriter

from lightning_runs.console import say
from lightning_runs.distributed import gather_rows
from lightning_runs.runs import free_path, run_folder


class PredictionWriter(BasePredictionWriter):
    """Writes `predictions.csv` (index, predicted label, its probability) into the run directory.

    An existing file is never overwritten: the next free `predictions-N.csv` is used instead. Under DDP, rank zero
    writes one file for the whole set, in the input's order.
    """

    def __init__(self, filename: str = "predictions.csv") -> None:
        super().__init__(write_interval="epoch")
        self.filename = filename
        self._written = None  # the line saying what was written, for teardown

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices) -> None:
        # Every rank takes part in the gathering: it is collective under DDP.
        # ShardSampler gives rank r the samples r, r + W, r + 2W, ...: row j of rank r is sample j * W + r.
        shards = gather_rows(torch.cat(predictions).to(pl_module.device))  # W x (R_r, C)
        probabilities = torch.empty(sum(map(len, shards)), *shards[0].shape[1:], dtype=shards[0].dtype)  # (N, C)
        for rank, shard in enumerate(shards):
            probabilities[rank :: len(shards)] = shard.cpu()
        if not trainer.is_global_zero:
            return
        confidence, labels = probabilities.max(dim=-1)
        path = free_path((run_folder(trainer) or Path(trainer.default_root_dir)) / self.filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["index", "label", "probability"])
            writer.writerows(zip(range(len(labels)), labels.tolist(), confidence.tolist(), strict=True))
        self._written = f"Wrote {len(labels)} predictions to {path}"

    def teardown(self, trainer, pl_module, stage: str) -> None:
        # Said here, after the progress bar has closed its line (at on_predict_end), not glued to its end.
        if self._written is not None:
            say(self._written)
            self._written = None
