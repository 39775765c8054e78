"""CSV, MLflow and W&B loggers that write into the run folder the placement chose, as TensorBoard's does.

Each takes `save_dir`, `name` and `version` like TensorBoardLogger, so a run keeps one folder, runs/<name>/version_N,
with its checkpoints, config and summary.json, whichever logger it has; and a fit resumed in that folder (or an
evaluation of its checkpoint) continues the logger's own run there. Lightning's own classes do neither:
CSVLogger deletes the metrics.csv of a folder it reopens; MLFlowLogger and WandbLogger have no run folder (their
`log_dir` is None, which breaks LightningCLI's config saving: Lightning #19441), put checkpoints under
<save_dir>/<experiment id>/<run id>, and open a new MLflow or W&B run on every resume.
"""

import json
from collections.abc import Mapping
from pathlib import Path

from lightning.fabric.utilities.logger import _convert_params
from lightning.pytorch.utilities import rank_zero_only
from torch import Tensor

from lightning_runs.atomic import write_atomically
from lightning_runs.run_folders import run_dir, versions

INSTALL = "pip install 'lightning-runs[loggers]'"
# A logger's `name` when none is given: the CLI gives each run one (cli/), so only a logger built outside it
# gets Lightning's own default.
UNNAMED = "lightning_logs"


class FolderLogger:
    """`<save_dir>/<name>/version_N`, laid out as TensorBoardLogger lays it out (a string version is the folder's
    name), and the id of the tracking service's run kept in a file there."""

    def _take_folder(self, save_dir: str, name: str | None, version: int | str | None) -> None:
        name = name or UNNAMED
        # A run without a claimed folder (an evaluation of no checkpoint) takes the next free version, as TensorBoard's.
        version = max((n for n, _ in versions(Path(save_dir) / name)), default=-1) + 1 if version is None else version
        self._folder_save_dir, self._folder_name, self._folder_version = save_dir, name, version
        self._folder = run_dir(save_dir, name, version)

    # What TensorBoardLogger answers for its folder (the tracking services' loggers answer others).
    save_dir = property(lambda self: self._folder_save_dir)
    name = property(lambda self: self._folder_name)
    version = property(lambda self: self._folder_version)
    log_dir = property(lambda self: str(self._folder))

    def _stored_id(self) -> str | None:
        path = self._folder / self.ID_FILE  # ty: ignore[missing-attribute]  # each logger's own (a mixin)
        return path.read_text().strip() if path.is_file() else None

    def _store_id(self, run_id: str) -> None:
        write_atomically(self._folder / self.ID_FILE, run_id + "\n")  # ty: ignore[missing-attribute]  # each logger's own

    @rank_zero_only
    def log_hyperparams(self, params) -> None:
        super().log_hyperparams(parameters(params))  # ty: ignore[missing-attribute]  # a mixin: the logger's class after it in the MRO

    @rank_zero_only
    def log_metrics(self, metrics: Mapping, step: int | None = None) -> None:
        # Tensors as Python numbers: the project's own scalars reach the loggers as tensors, which TensorBoard's and
        # CSV's read out themselves (train/grad_norm stays on the device until then: faults/).
        super().log_metrics({key: v.item() if isinstance(v, Tensor) else v for key, v in metrics.items()}, step)  # ty: ignore[missing-attribute]  # a mixin: the logger's class after it in the MRO


def parameters(params) -> dict:
    """A run's parameters without LightningCLI's own keys (`_instantiator`, `_class_path`), as plain values: a tuple
    (an input shape) is a list, which every logger and `yaml.safe_load` of hparams.yaml read; anything else not JSON,
    its text."""
    plain = json.loads(json.dumps(_convert_params(params), default=str))
    return {k: v for k, v in plain.items() if not k.startswith("_")}
