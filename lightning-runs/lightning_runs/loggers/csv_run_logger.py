"""CSVRunLogger: metrics.csv and hparams.yaml in the run folder, appended to by a resumed fit or an evaluation."""

import csv
import os

from lightning.pytorch.core.saving import load_hparams_from_yaml
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from lightning.pytorch.loggers.logger import rank_zero_experiment
from lightning.pytorch.utilities import rank_zero_only

from lightning_runs.loggers.run_folder import UNNAMED, parameters
from lightning_runs.run_folders import RUNS


class CSVRunLogger(CSVLogger):
    """metrics.csv and hparams.yaml in the run folder; a resumed fit, or a test of its checkpoint, appends to its
    metrics.csv. Takes CSVLogger's arguments: the CLI builds it for `--trainer.logger <Lightning's CSVLogger>`."""

    def __init__(
        self, save_dir: str = RUNS, name: str | None = None, version: int | str | None = None, **csv_logger
    ) -> None:
        super().__init__(save_dir, name or UNNAMED, version, **csv_logger)

    @property
    @rank_zero_experiment
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None:
            self._experiment = _AppendingWriter(log_dir=self.log_dir)
        return self._experiment  # ty: ignore[invalid-explicit-return]  # Lightning declares it as fabric's writer; ours subclasses pytorch's

    @rank_zero_only
    def log_hyperparams(self, params) -> None:
        super().log_hyperparams(parameters(params))


class _AppendingWriter(ExperimentWriter):
    def __init__(self, log_dir: str) -> None:
        super().__init__(log_dir)
        # Each command rewrites hparams.yaml with what it logged: an evaluation would drop the fit's trainer settings.
        hparams = os.path.join(self.log_dir, self.NAME_HPARAMS_FILE)
        if self._fs.isfile(hparams):
            self.hparams = load_hparams_from_yaml(hparams)

    def _check_log_dir_exists(self) -> None:
        # Lightning's deletes an existing metrics.csv (with a warning). Keep it, and its columns: rows appended under
        # a header of fewer columns would be refused.
        if self._fs.isfile(self.metrics_file_path):
            with self._fs.open(self.metrics_file_path, "r", newline="") as file:
                self.metrics_keys = next(csv.reader(file), [])
