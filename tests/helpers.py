"""What the project's tests share: running `python -m project` in this process, and its one-line refusals.
The template's own tests (tests/template/, not copied into new projects) build on these."""

from pathlib import Path

import pytest
import torch
from lightning.pytorch.callbacks import Callback

from lightning_runs.errors import main
from project.cli import cli_main

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = str(ROOT / "configs" / "digits.yaml")
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
ONE_EPOCH_TWO_BATCHES = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]


def run(*args: str):
    """`python -m project <args>` in this process, with the default config and no progress bars: what it prints,
    and on failure SystemExit with its exit code."""
    subcommand, *rest = args
    return main(lambda: cli_main([subcommand, "--config", DEFAULT, *QUIET, *rest]))


def refusal(capsys, command, code: int = 2) -> str:
    """Run `command()`, expecting the entry point's exit `code` with one `error:` line and no traceback; that line."""
    with pytest.raises(SystemExit) as exit_:
        command()
    err = capsys.readouterr().err
    assert exit_.value.code == code, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    return errors[0]


class CrashAt(Callback):
    """A test helper: raises as the given global step begins, as a crash or a kill would stop a run."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step == self.step:
            raise RuntimeError(f"crash at step {self.step}")


class OnlyClasses(torch.nn.Module):
    """A network written for an older model: its __init__ takes the class count alone (test_model.py)."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x.flatten(1))
