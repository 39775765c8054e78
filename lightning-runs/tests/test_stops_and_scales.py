"""Promises of docs/reliability.md's tables that no test held: a second Ctrl-C stops at once, a stop during the
sanity check leaves no checkpoint (a SIGTERM no folder, a Ctrl-C the run's config and an interrupted summary), and a
float16 loss scale below `--gradient_check.min_loss_scale` stops the run, exit 1, suggesting bf16-mixed."""

import json
import os
import signal
from pathlib import Path

import pytest
from lightning.pytorch.callbacks import Callback
from tiny_runs import run

RUN = Path("runs/tiny/version_0")
SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3"]


class SignalsAt(Callback):
    """Sends this process `signum` `times` times as training step 1 begins, or as the sanity check's first batch
    does."""

    def __init__(self, signum: int, times: int = 1, sanity: bool = False) -> None:
        self.signum, self.times, self.sanity = signum, times, sanity

    def _send(self) -> None:
        for _ in range(self.times):
            os.kill(os.getpid(), self.signum)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if not self.sanity and trainer.global_step == 1:
            self._send()

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0) -> None:
        if self.sanity and trainer.sanity_checking and batch_idx == 0:
            self._send()


def stopped(capsys, callback: Callback, code: int) -> str:
    sigint = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as exit_:
            run("fit", *SHORT, callbacks=[callback])
    finally:
        signal.signal(signal.SIGINT, sigint)  # Lightning ignores further Ctrl-C while it shuts down
    err = capsys.readouterr().err
    assert exit_.value.code == code and "Traceback" not in err, err[-2000:]
    return err.strip().splitlines()[-1]


def test_a_second_ctrl_c_stops_at_once_without_finishing_the_batch(capsys):
    # One Ctrl-C would finish step 1 and save last.ckpt at step 2; the second stops inside the step, saving nothing.
    assert stopped(capsys, SignalsAt(signal.SIGINT, times=2), 130) == "stopped by Ctrl-C"
    assert not (RUN / "checkpoints/last.ckpt").exists()
    assert json.loads((RUN / "summary.json").read_text())["status"] == "interrupted"


def test_a_stop_during_the_sanity_check_leaves_no_checkpoint_and_after_sigterm_no_folder(capsys):
    said = stopped(capsys, SignalsAt(signal.SIGTERM, sanity=True), 143)
    assert said == "stopped by SIGTERM during fit; run the same command again" and not Path("runs").exists()
    assert stopped(capsys, SignalsAt(signal.SIGINT, sanity=True), 130) == "stopped by Ctrl-C"
    assert (RUN / "config.yaml").is_file() and not list(RUN.rglob("*.ckpt"))
    assert json.loads((RUN / "summary.json").read_text())["status"] == "interrupted"


def test_a_float16_loss_scale_below_its_floor_stops_the_run_suggesting_bf16(capsys):
    from test_precision import CPU_FLOAT16  # Lightning's 16-mixed with a CPU scaler, as on a GPU

    with pytest.raises(SystemExit) as exit_:  # the scale starts at 65536: below a floor of 1e9 at the first step
        run("fit", *SHORT, "--trainer.plugins", CPU_FLOAT16, "--gradient_check.min_loss_scale=1e9")
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_.value.code == 1 and "float16 loss scale fell to 6.6e+04" in line and "bf16-mixed" in line, line
