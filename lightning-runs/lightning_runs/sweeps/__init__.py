"""Optuna sweeps: the study's storage and who finishes it (storage), and a fit reporting to its trial (trial)."""

from lightning_runs.sweeps.storage import open_study
from lightning_runs.sweeps.trial import ReportToTrial

__all__ = ["ReportToTrial", "open_study"]
