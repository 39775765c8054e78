"""Optuna sweeps: a fit reporting to its trial (trial), a trial run as a fit process (objective), what trials are
scored by (scoring), the study's storage and who finishes it (storage), whose turn it is to start a trial (turns), the
trials of workers that died (workers), and the search space (space). Only `trial` is imported here: every fit imports
it, and Optuna is the `sweep` extra, imported by the sweep tool alone."""

from lightning_runs.sweeps.trial import ReportToTrial

__all__ = ["ReportToTrial"]
