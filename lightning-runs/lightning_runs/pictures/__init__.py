"""Pictures of a run: what the module declares (Figures) and its weights and gradients (Histograms), for each logger
that shows pictures (writers)."""

from lightning_runs.pictures.figures import Figures
from lightning_runs.pictures.histograms import Histograms

__all__ = ["Figures", "Histograms"]
