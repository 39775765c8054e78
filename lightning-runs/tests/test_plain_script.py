"""The README's plain-script recipe, run as written: stopped by SIGTERM inside an epoch it exits 143 with one line in
Python's terms, and the same script run again resumes that run in its own folder and ends with the uninterrupted run's
checkpoint, bit for bit."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_runs import assert_same_checkpoint, load, process_environment

README = Path(__file__).parents[1] / "README.md"
# What the recipe leaves to the user: a model and a datamodule (the library's tiny task with resumable batches, its
# module sending itself SIGTERM as a scheduler would, at the step given), seeded.
YOURS = """
import os, signal
import lightning as L
from tiny_tasks import TinyBatches, TinyClassifier

class Preempted(TinyClassifier):
    def on_train_batch_start(self, batch, batch_idx):
        if self.global_step == int(os.environ.get("SIGTERM_AT_STEP", -1)):
            os.kill(os.getpid(), signal.SIGTERM)

L.seed_everything(0)
model, datamodule = Preempted(), TinyBatches()
"""


def recipe() -> str:
    section = README.read_text().split("## In a plain Lightning script", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL)[1]


def script(folder: Path, stop: int | None = None) -> subprocess.CompletedProcess:
    environment = {**process_environment(), "SIGTERM_AT_STEP": str(-1 if stop is None else stop)}
    argv = [sys.executable, "-c", YOURS + recipe()]
    return subprocess.run(argv, cwd=folder, env=environment, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_readmes_plain_script_exits_143_on_sigterm_and_resumes_as_written(tmp_path):
    last = tmp_path / "lightning_logs/version_0/checkpoints/last.ckpt"
    whole = script(tmp_path)
    assert whole.returncode == 0, whole.stderr[-3000:]
    uninterrupted = load(last)
    shutil.rmtree(tmp_path / "lightning_logs")  # the same folder for all three: checkpoints hold their paths

    stopped = script(tmp_path, stop=8)  # inside the second epoch of six batches
    assert stopped.returncode == 143, stopped.stderr[-3000:]
    said = stopped.stderr.strip().splitlines()[-1]
    assert said == (f'stopped by SIGTERM at step 9; saved {last}; resume with trainer.fit(..., ckpt_path="last")')
    assert "Traceback" not in stopped.stderr

    resumed = script(tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert not (tmp_path / "lightning_logs/version_1").exists(), "the run continued in its own folder"
    assert_same_checkpoint(uninterrupted, load(last))

    finished = script(tmp_path)  # once more: the finished run is loaded and trains no further
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert load(last)["global_step"] == uninterrupted["global_step"]
    assert not (tmp_path / "lightning_logs/version_1").exists()
