"""`predict` into the run folder: PredictionWriter."""

from lightning_runs.predictions.prediction_writer import PredictionWriter

__all__ = ["PredictionWriter"]
