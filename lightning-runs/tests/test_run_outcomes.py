"""How a run ends, and what it prints: a failure or an interruption leaves its scalars and a summary saying so;
--quiet leaves only what CI logs need, Ctrl-C's line and exit 130 included; under DDP only rank zero writes the
summary, the config and the events, and says the closing block."""

import json
import signal
from pathlib import Path

import pytest
from tiny_runs import QUIET, command, load, run, scalars, start, wait_for

from lightning_runs.errors import Stopped
from tiny_tasks import TinyClassifier

pytestmark = pytest.mark.slow  # each test makes a real run

RUN = Path("runs/tiny/version_0")
THREE_EPOCHS_FIVE_BATCHES = ["--trainer.max_epochs=3", "--trainer.limit_train_batches=5"]


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
    wait_for(lambda: last.exists() or process.poll() is not None, what="the first last.ckpt")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err[-2000:]
    step = load(last)["global_step"]
    assert (
        err.strip().splitlines()[-1] == f"stopped by Ctrl-C at step {step}; saved {last}; resume with --ckpt_path last"
    )
    assert "Traceback" not in err
    assert json.loads((RUN / "summary.json").read_text())["status"] == "interrupted"


def test_under_ddp_only_rank_zero_writes_the_summary_the_config_and_the_events():
    ddp = ["--trainer.strategy=ddp", "--trainer.devices=2", "--trainer.accelerator=cpu"]
    fit = start("fit", *QUIET, *ddp, "--trainer.max_epochs=2", "--trainer.limit_train_batches=2")  # rank 0; its child 1
    out, err = fit.communicate(timeout=300)
    assert fit.returncode == 0, err[-3000:]
    assert out.count("Fit completed") == 1, "the closing block comes from rank zero only"
    assert [p.name for p in Path("runs/tiny").iterdir()] == ["version_0"], "no folder claimed by the other rank"
    (events,) = RUN.glob("events.out.tfevents.*")  # events.out.tfevents.<time>.<host>.<pid>.<n>
    assert events.name.split(".")[-2] == str(fit.pid), "written by rank zero, the process started"
    files = sorted(p.name for p in RUN.iterdir() if p.is_file() and p != events)
    assert files == ["config.yaml", "hparams.yaml", "summary.json"], "one config: no config.fit.yaml of another rank"
    summary = json.loads((RUN / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["device"]["world_size"] == 2
    assert summary["process"]["pid"] == fit.pid, "written by rank zero, the process started"
    assert summary["global_step"] == 4 and [s for s, _ in scalars(RUN, "train/loss")] == [0, 1, 2, 3]
