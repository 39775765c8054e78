"""Pictures of a run: the callbacks (callbacks) drawing a classification (classification) or a regression
(regression) from samples (samples), written to whichever loggers the run has (writers)."""

from lightning_runs.pictures.callbacks import Figures, Histograms
from lightning_runs.pictures.classification import ClassFigures
from lightning_runs.pictures.regression import RegressionFigures
from lightning_runs.pictures.writers import picture_writers

__all__ = ["ClassFigures", "Figures", "Histograms", "RegressionFigures", "picture_writers"]
