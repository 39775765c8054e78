"""Loggers that write into the run's own folder: CSV (csv_run), MLflow and W&B (trackers), what they share (run_folder);
MLflow's local store (mlflow_store), and what the configured logger needs before its run starts (configured)."""

from lightning_runs.loggers.csv_run import CSVRunLogger
from lightning_runs.loggers.run_folder import RunFolder
from lightning_runs.loggers.trackers import MLFlowRunLogger, WandbRunLogger

__all__ = ["CSVRunLogger", "MLFlowRunLogger", "RunFolder", "WandbRunLogger"]
