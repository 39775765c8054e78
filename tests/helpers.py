"""What the project's tests share: running `python -m project` in this process, and its one-line refusals.
The template's own tests (tests/template/, not copied into new projects) build on these."""

from pathlib import Path

import torch

from lightning_runs.errors import main
from lightning_runs.testing import CrashAt, refusal  # noqa: F401 - re-exported for the project's tests

from project.cli import cli_main

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = str(ROOT / "configs" / "digits.yaml")
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
ONE_EPOCH_TWO_BATCHES = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]


def run(*args: str):
    """`python -m project <args>` in this process, with the default config and no progress bars: what it
    prints, and on failure SystemExit with its exit code."""
    subcommand, *rest = args
    return main(lambda: cli_main([subcommand, "--config", DEFAULT, *QUIET, *rest]))


class OnlyClasses(torch.nn.Module):
    """A network written for an older model: its __init__ takes the class count alone (test_model.py)."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x.flatten(1))
