"""Mixed precision: 16-mixed keeps its gradient scaler in the checkpoint and gets it back on resume."""

import json
from pathlib import Path

import pytest
import torch
from lightning.pytorch.callbacks import Callback
from tiny_runs import QUIET, load, run

from tiny_tasks import cli_main

pytestmark = pytest.mark.slow

LAST = Path("runs/tiny/version_0/checkpoints/last.ckpt")
ONE_EPOCH_FIVE_BATCHES = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=5"]
# Lightning's 16-mixed plugin with a CPU scaler: float16 autocast and loss scaling as on a GPU, so this machine
# exercises the same save and restore code (asking for 16-mixed on a CPU gives bf16-mixed, which has no scaler).
CPU_FLOAT16 = json.dumps(
    {
        "class_path": "lightning.pytorch.plugins.precision.MixedPrecision",
        "init_args": {
            "precision": "16-mixed",
            "device": "cpu",
            "scaler": {"class_path": "torch.amp.GradScaler", "init_args": {"device": "cpu"}},
        },
    }
)
FLOAT16 = [
    pytest.param(["--trainer.plugins", CPU_FLOAT16], id="cpu"),
    pytest.param(["--trainer.accelerator=gpu", "--trainer.devices=1", "--trainer.precision=16-mixed"], id="gpu",
                 marks=pytest.mark.gpu),
]  # fmt: skip


class ScalerAtStart(Callback):
    """The gradient scaler's state when training starts: after a resumed fit has restored its checkpoint."""

    def on_train_start(self, trainer, pl_module) -> None:
        self.state = trainer.precision_plugin.scaler.state_dict()


@pytest.mark.parametrize("float16", FLOAT16)
def test_16_mixed_saves_its_grad_scaler_and_a_resumed_fit_restores_it(float16):
    two_epochs = [*float16, "--trainer.max_epochs=2", *ONE_EPOCH_FIVE_BATCHES[1:]]
    with pytest.raises(RuntimeError, match="crash"):  # after the first epoch: a finished run is not resumed
        run("fit", *two_epochs, "--trainer.callbacks+=lightning_runs.testing.CrashAt", "--trainer.callbacks.step=5")
    saved = load(LAST)["MixedPrecision"]  # Lightning stores the precision plugin's state under its class name
    untouched = torch.amp.GradScaler("cpu").state_dict()
    assert saved.keys() == untouched.keys() and saved != untouched, "5 steps moved the scale or its growth tracker"
    at_start = ScalerAtStart()
    cli_main(["fit", *QUIET, *two_epochs, "--ckpt_path=last"], callbacks=[at_start])
    assert at_start.state == saved


@pytest.mark.parametrize("precision", ["bf16-mixed", "16-mixed"])
def test_on_the_cpu_mixed_precision_is_bf16_which_needs_no_scaler(precision):
    cli = run("fit", f"--trainer.precision={precision}", *ONE_EPOCH_FIVE_BATCHES)
    assert cli.trainer.precision_plugin.precision == "bf16-mixed"
    assert "MixedPrecision" not in load(LAST)
