"""Optuna sweeps: a fit reporting to its trial (trial), the study's storage and who finishes it (storage), whose
turn it is to start a trial (turns), and the trials of workers that died (workers). Only `trial` is imported here:
every fit imports it, and Optuna is the `sweep` extra, imported by the sweep tool alone."""

from lightning_runs.sweeps.trial import ReportToTrial

__all__ = ["ReportToTrial"]
