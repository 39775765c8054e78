"""The example compiled (`--compile.enabled true`): its CNN with dropout, augmentation and a per-step schedule
resumes bit for bit after a SIGTERM mid-epoch, and its checkpoint predicts and exports as an eager run's does."""

from pathlib import Path

import pytest

from lightning_runs.tools import export

from project.cli import cli_main

from support import assert_same_checkpoint, load, run, working_directory

ARGS = ["--compile.enabled=true", "--trainer.max_epochs=2", "--trainer.limit_train_batches=4"]
CHECKPOINTS = Path("runs/digits/version_0/checkpoints")


@pytest.mark.slow
def test_a_compiled_fit_stopped_mid_epoch_resumes_bit_for_bit_then_predicts_and_exports(tmp_path):
    for folder in ("whole", "resumed"):
        (tmp_path / folder).mkdir()
    with working_directory(tmp_path / "whole"):
        run("fit", *ARGS)
    with working_directory(tmp_path / "resumed"):
        with pytest.raises(SystemExit) as stop:
            run("fit", *ARGS, "--trainer.callbacks+=support.SignalAt", "--trainer.callbacks.step=5")
        assert stop.value.code == 143
        run("fit", *ARGS, f"--ckpt_path={CHECKPOINTS / 'last.ckpt'}")
        assert_same_checkpoint(load(tmp_path / "whole" / CHECKPOINTS / "last.ckpt"), load(CHECKPOINTS / "last.ckpt"))
        run("predict", "--ckpt_path", str(CHECKPOINTS / "best.ckpt"), "--compile.enabled=true")
        assert len((CHECKPOINTS.parent / "predictions.csv").read_text().splitlines()) == 1 + 180, "the test split"
        assert export.main(cli_main, ["--ckpt_path", str(CHECKPOINTS / "best.ckpt")]).is_file()
