"""`predict` to a CSV: the columns a model's outputs make (columns), written by one writer across ranks (writer)."""

from lightning_runs.predictions.columns import Table
from lightning_runs.predictions.writer import PredictionWriter

__all__ = ["PredictionWriter", "Table"]
