"""Runs that go wrong stop cleanly: SIGTERM and Ctrl-C save first (CheckpointOnSignal), NaN gradients stop before the
weights (GradientCheck), a monitored metric the module does not log is one line (MonitorCheck), so is a loader of no
batches (LoaderCheck)."""

from lightning_runs.faults.checkpoint_on_signal import CheckpointOnSignal
from lightning_runs.faults.gradient_check import GradientCheck
from lightning_runs.faults.loader_check import LoaderCheck
from lightning_runs.faults.monitor_check import MonitorCheck

__all__ = ["CheckpointOnSignal", "GradientCheck", "LoaderCheck", "MonitorCheck"]
