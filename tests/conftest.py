import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from project.cli import cli_main

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = str(ROOT / "configs" / "digits.yaml")
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


def pytest_collection_modifyitems(config, items):
    """`@pytest.mark.gpu` tests skip on a machine without CUDA (this suite's CI), and run on one that has it."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; python benchmarks/gpu_check.py runs these on one")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Every test runs in its own empty directory, so runs/ starts empty."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str):
    """`python -m project <args>` in this process, with the default config and no progress bars."""
    subcommand, *rest = args
    return cli_main([subcommand, "--config", DEFAULT, *QUIET, *rest])


def run_subprocess(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m project <args>` as a user types it; needed where Lightning starts processes itself (DDP)."""
    return subprocess.run(
        [sys.executable, "-m", "project", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


# Set by torchrun, SLURM and Lightning's own launcher: a test that launches DDP itself must not inherit them.
LAUNCHER_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")


def ddp_environment(**extra: str) -> dict[str, str]:
    """This environment without any launcher's variables (a CI job may itself run under SLURM or torchrun)."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "TORCHELASTIC_")) and k not in LAUNCHER_VARIABLES
    }
    # One thread per process: the ranks share the cores (torchrun sets this too).
    return {**clean, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **extra}


def scalars(run_dir: Path, tag: str) -> list[tuple[int, float]]:
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    return [(event.step, event.value) for event in events.Scalars(tag)]


def load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)
