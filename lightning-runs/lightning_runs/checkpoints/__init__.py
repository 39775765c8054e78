"""Checkpoints: written whole (AtomicCheckpointIO, BackgroundCheckpointIO; a sharded fit's folders: sharded), read back
as plain data or refused naming the file (read_checkpoint), the callbacks that keep last and best (LastCheckpoint,
BestCheckpoint), the RNG states (RandomState; a loader's workers': WorkerRandomState), and a new run's start from
another's weights (InitFrom)."""

from lightning_runs.checkpoints.checkpoint_io import AtomicCheckpointIO, BackgroundCheckpointIO, read_checkpoint
from lightning_runs.checkpoints.init_from import InitFrom
from lightning_runs.checkpoints.last_checkpoint import BestCheckpoint, LastCheckpoint
from lightning_runs.checkpoints.random_state import RandomState
from lightning_runs.checkpoints.rng import WorkerRandomState

__all__ = [
    "AtomicCheckpointIO",
    "BackgroundCheckpointIO",
    "BestCheckpoint",
    "InitFrom",
    "LastCheckpoint",
    "RandomState",
    "WorkerRandomState",
    "read_checkpoint",
]
