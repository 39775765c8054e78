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


def scalars(run_dir: Path, tag: str) -> list[tuple[int, float]]:
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    return [(event.step, event.value) for event in events.Scalars(tag)]


def load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


# The short run the observability tests and the notebooks read: 5 epochs of 5 steps, pictures and histograms
# every 2 epochs (so epoch 5 is logged as the end of fit, not as one of every 2), gradient histograms on, a
# throughput window of 3 steps; then `test` on its best checkpoint, which logs into the same run directory.
SHORT_RUN = [
    "--trainer.max_epochs=5",
    "--trainer.limit_train_batches=5",
    "--figures.every_n_epochs=2",
    "--histograms.every_n_epochs=2",
    "--histograms.gradients=true",
    "--throughput.window=3",
]


@pytest.fixture(scope="session")
def short_run(tmp_path_factory):
    home = tmp_path_factory.mktemp("short_run")
    cwd = os.getcwd()
    os.chdir(home)
    try:
        fit = run("fit", *SHORT_RUN)
        test = run("test", "--ckpt_path", "best")
    finally:
        os.chdir(cwd)
    return home / "runs/digits/version_0", fit, test
