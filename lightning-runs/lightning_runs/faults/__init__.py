"""Runs that go wrong stop cleanly: at the first NaN/Inf gradient (divergence), on SIGTERM or Ctrl-C with a
checkpoint to resume from (signals)."""

from lightning_runs.faults.divergence import GradientCheck
from lightning_runs.faults.signals import CheckpointOnSignal

__all__ = ["CheckpointOnSignal", "GradientCheck"]
