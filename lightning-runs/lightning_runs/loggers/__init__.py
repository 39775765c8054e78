"""Loggers that write into the run's own folder (run_loggers), MLflow's local store (mlflow_store), and what the
configured logger needs before its run starts (configured)."""

from lightning_runs.loggers.run_loggers import CSVRunLogger, MLFlowRunLogger, RunFolder, WandbRunLogger

__all__ = ["CSVRunLogger", "MLFlowRunLogger", "RunFolder", "WandbRunLogger"]
