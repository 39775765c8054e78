"""How a run ends, and what it prints: a failure or an interruption leaves its scalars and a summary saying so;
--quiet leaves only what CI logs need, Ctrl-C's line and exit 130 included; under DDP the pictures count every rank
and only rank zero writes."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tiny_runs import QUIET, command, load, process_environment, run, start

from lightning_runs.errors import Stopped
from tiny_tasks import TinyClassifier, TinyDataModule

pytestmark = pytest.mark.slow  # each test makes a real run

RUN = Path("runs/tiny/version_0")
THREE_EPOCHS_FIVE_BATCHES = ["--trainer.max_epochs=3", "--trainer.limit_train_batches=5"]


def read_events(run_dir: Path) -> EventAccumulator:
    """Every event of a run's TensorBoard files (size_guidance 0: keep all, not a sample)."""
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "images": 0})
    events.Reload()
    return events


def scalars(run_dir: Path, tag: str) -> list[tuple[int, float]]:
    return [(event.step, event.value) for event in read_events(run_dir).Scalars(tag)]


def raise_at_step(step: int, exception: BaseException):
    train = TinyClassifier.training_step

    def training_step(self, batch, batch_idx):
        if self.global_step == step:
            raise exception
        return train(self, batch, batch_idx)

    return training_step


def test_a_run_that_raises_keeps_every_scalar_logged_before_and_says_failed(monkeypatch):
    monkeypatch.setattr(TinyClassifier, "training_step", raise_at_step(7, RuntimeError("boom at step 7")))
    with pytest.raises(RuntimeError, match="boom"):
        run("fit", *THREE_EPOCHS_FIVE_BATCHES)
    assert [step for step, _ in scalars(RUN, "train/loss")] == list(range(7))
    assert [step for step, _ in scalars(RUN, "val/loss")] == [4]
    summary = json.loads((RUN / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert summary["error"] == {"type": "RuntimeError", "message": "boom at step 7"}
    assert (summary["epochs"], summary["global_step"]) == (1, 7)
    assert summary["best_checkpoint"]["score"] == pytest.approx(scalars(RUN, "val/loss")[0][1])


@pytest.mark.parametrize(
    "exception,type_name", [(KeyboardInterrupt(), "KeyboardInterrupt"), (Stopped(signal.SIGTERM, "SIGTERM"), "Stopped")]
)
def test_an_interrupted_run_says_so_and_why(monkeypatch, exception, type_name):
    monkeypatch.setattr(TinyClassifier, "training_step", raise_at_step(3, exception))
    sigint = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit):  # the exit codes of Ctrl+C and SIGTERM
            run("fit", *THREE_EPOCHS_FIVE_BATCHES)
    finally:
        signal.signal(signal.SIGINT, sigint)  # Lightning ignores further Ctrl+C while it shuts down
    summary = json.loads((RUN / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["error"]["type"] == type_name
    assert summary["global_step"] == 3 and [s for s, _ in scalars(RUN, "train/loss")] == [0, 1, 2]


def test_quiet_mode_prints_no_progress_or_info_lines():
    loud = command("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2")
    quiet = command("fit", "--quiet", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2")
    assert loud.returncode == quiet.returncode == 0, quiet.stderr[-2000:]
    chatter = ["Seed set to 0", "GPU available", "Trainable params", "Epoch 0"]
    assert all(line in loud.stdout + loud.stderr for line in chatter)
    assert not [line for line in chatter if line in quiet.stdout + quiet.stderr], quiet.stdout + quiet.stderr
    assert json.loads(Path("runs/tiny/version_1/summary.json").read_text())["status"] == "completed"


def test_quiet_mode_still_shows_errors():
    result = command("fit", "--quiet", "--trainer.max_epochs=1", "--data.batch_size=many")
    assert result.returncode == 2 and "batch_size" in result.stderr
    result = command("fit", "--quiet", "--trainer.limit_train_batches=2", "--early_stopping.monitor=val/accuracy")
    assert result.returncode != 0 and "val/accuracy" in result.stderr


def test_ctrl_c_saves_a_checkpoint_exits_130_and_says_so_under_quiet():
    process = start("fit", "--quiet", "--trainer.max_epochs=1000")  # far from done when its first checkpoint appears
    last = RUN / "checkpoints/last.ckpt"
    deadline = time.monotonic() + 120
    while not last.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err[-2000:]
    step = load(last)["global_step"]
    assert (
        err.strip().splitlines()[-1] == f"stopped by Ctrl-C at step {step}; saved {last}; resume with --ckpt_path last"
    )
    assert "Traceback" not in err
    assert json.loads((RUN / "summary.json").read_text())["status"] == "interrupted"


DDP_SCRIPT = """
import sys

from lightning_runs.pictures.callbacks import Figures
from tiny_tasks import cli_main

cli = cli_main(sys.argv[1:])
figures = next(c for c in cli.trainer.callbacks if isinstance(c, Figures))
# One write of the whole line: both ranks share the pipe, and print's two writes (text, newline) could interleave.
counted = int(figures.matrices["val"].sum())
sys.stdout.write(f"rank {cli.trainer.global_rank}: {counted} samples in the confusion matrix\\n")
"""


def test_under_ddp_the_confusion_matrix_covers_every_rank_and_only_rank_zero_writes(tmp_path):
    script = tmp_path / "fit.py"  # a script, not `-c`: Lightning starts the second rank by re-running it
    script.write_text(DDP_SCRIPT)
    args = ["fit", *QUIET, "--trainer.strategy=ddp", "--trainer.devices=2"]
    args += ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2", "--figures.every_n_epochs=1"]
    result = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300, env=process_environment()
    )
    assert result.returncode == 0, result.stderr[-3000:]
    reports = sorted(line for line in result.stdout.splitlines() if line.startswith("rank "))
    data = TinyDataModule()
    data.setup("fit")
    samples = len(data.splits["val"][0])
    assert reports == [f"rank {rank}: {samples} samples in the confusion matrix" for rank in (0, 1)]
    assert result.stdout.count("Fit completed") == 1, "the closing block comes from rank zero only"
    assert len(list(RUN.glob("events.out.tfevents.*"))) == 1
    assert [image.step for image in read_events(RUN).Images("val/confusion_matrix")] == [2]
    summary = json.loads((RUN / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["device"]["world_size"] == 2
