"""Callbacks that Lightning does not ship: writing predictions to a CSV in the run directory."""

import csv
from pathlib import Path

import torch
from lightning.pytorch.callbacks import BasePredictionWriter

from project.runs import free_path


class PredictionWriter(BasePredictionWriter):
    """Writes `predictions.csv` (index, predicted label, its probability) into the run directory.

    An existing file is never overwritten: the next free `predictions-N.csv` is used instead.
    """

    def __init__(self, filename: str = "predictions.csv") -> None:
        super().__init__(write_interval="epoch")
        self.filename = filename

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices) -> None:
        probabilities = torch.cat(predictions)  # (N, num_classes)
        confidence, labels = probabilities.max(dim=-1)
        path = free_path(Path(trainer.log_dir) / self.filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["index", "label", "probability"])
            writer.writerows(zip(range(len(labels)), labels.tolist(), confidence.tolist(), strict=True))
        print(f"Wrote {len(labels)} predictions to {path}")
