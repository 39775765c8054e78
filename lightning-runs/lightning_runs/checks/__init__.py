"""Checks before a run starts: the options, devices, data and checkpoint agree (preflight), and the launcher
started the processes the strategy expects (launchers)."""

from lightning_runs.checks.launchers import check_launch
from lightning_runs.checks.preflight import (
    check_checkpoint_fits,
    check_data,
    check_devices,
    check_options,
    check_validation_runs,
)

__all__ = [
    "check_checkpoint_fits",
    "check_data",
    "check_devices",
    "check_launch",
    "check_options",
    "check_validation_runs",
]
