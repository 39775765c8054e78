"""Loggers that write into the run's own folder, as TensorBoard's does, and continue their service's run on a resume:
CSVRunLogger, MLFlowRunLogger (an SQLite store beside the runs), WandbRunLogger (offline by default); and
TensorBoardRunLogger, TensorBoard's with a flush every few seconds instead of every logged step."""

from lightning_runs.loggers.csv_run_logger import CSVRunLogger
from lightning_runs.loggers.run_folder import FolderLogger
from lightning_runs.loggers.tensorboard_run_logger import TensorBoardRunLogger
from lightning_runs.loggers.trackers import MLFlowRunLogger, WandbRunLogger

__all__ = ["CSVRunLogger", "FolderLogger", "MLFlowRunLogger", "TensorBoardRunLogger", "WandbRunLogger"]
