"""Optuna sweeps: each trial a fit process of its own, reporting to a study many workers share."""
