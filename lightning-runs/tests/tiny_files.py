"""The tiny task's points from a file of the user's: `PointsFile`, a DataModule whose required `path` names its data
(`.npz` with arrays `points` and `labels`, or `.csv` of a point's values and its label a row), for the tests of run
names and of what a checkpoint's saved `path` is (a file name, even where it reads like a module's attribute)."""

import numpy as np
import torch

from tiny_tasks import TinyDataModule


def read_points(path: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(points, labels) from `.npz` (arrays `points`, `labels`) or `.csv` (a row of values and its label each)."""
    if path.endswith(".csv"):
        rows = torch.from_numpy(np.loadtxt(path, delimiter=",", ndmin=2)).float()
        return rows[:, :-1], rows[:, -1].long()
    arrays = np.load(path)
    return torch.from_numpy(arrays["points"]), torch.from_numpy(arrays["labels"])


class PointsFile(TinyDataModule):
    """The tiny task's kind of points, from a file of the user's: its required `path` names the data."""

    def __init__(self, path: str, batch_size: int = 32) -> None:
        points, labels = read_points(path)
        super().__init__(
            n=len(points), features=points.shape[1], num_classes=int(labels.max()) + 1, batch_size=batch_size
        )

    def setup(self, stage: str) -> None:
        if self.splits is None:
            points, labels = read_points(self.hparams.path)
            n_eval = len(points) // 8
            bounds = {"train": (0, len(points) - 2 * n_eval), "val": (-2 * n_eval, -n_eval), "test": (-n_eval, None)}
            self.splits = {name: (points[a:b], labels[a:b]) for name, (a, b) in bounds.items()}
