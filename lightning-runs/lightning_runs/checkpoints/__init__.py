"""Checkpoints: written atomically (io; a sharded fit's folders: sharded), the callbacks that keep best and last and
the RNG state (callbacks), read back trusting nothing (loading, class_paths, field_types, optimizer_states), and which
metric each watches (monitored)."""

from lightning_runs.checkpoints.callbacks import BestCheckpoint, RandomState, RunCheckpoint
from lightning_runs.checkpoints.io import AtomicCheckpointIO, BackgroundCheckpointIO
from lightning_runs.checkpoints.loading import load_plain, read_checkpoint
from lightning_runs.checkpoints.monitored import MonitoredMetrics

__all__ = [
    "AtomicCheckpointIO",
    "BackgroundCheckpointIO",
    "BestCheckpoint",
    "MonitoredMetrics",
    "RandomState",
    "RunCheckpoint",
    "load_plain",
    "read_checkpoint",
]
