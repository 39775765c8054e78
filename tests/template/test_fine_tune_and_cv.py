"""Experiments past one run on the template's own recipe: the digits network fine-tuned into a 5-class head and into a
regression head (--init_from), and the digits recipe cross-validated (cv), each as a user types it."""

import json
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from project.data import DigitsDataModule
from project.networks import DigitsCNN

from support import ONE_EPOCH_TWO_BATCHES, load, run, run_subprocess


class DigitValue(L.LightningModule):
    """A regression head on the digits network, as a user writes one: the digit's value as a number, (N, 8, 8) ->
    (N,); its `network` has the classifier's parts, so --init_from loads the features and says the head is new."""

    def __init__(self, input_shape: tuple[int, ...] = (8, 8), lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.network = DigitsCNN(1, tuple(input_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self(x), y.float())

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val/loss", F.mse_loss(self(x), y.float()))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def init_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("init from"))


def test_the_digits_network_fine_tuned_into_five_classes_and_a_regression(capsys):
    run("fit", *ONE_EPOCH_TWO_BATCHES)
    images, labels = DigitsDataModule().load()
    keep = labels < 5
    np.savez("five.npz", samples=images[keep].numpy(), labels=labels[keep].numpy())
    capsys.readouterr()
    five = [
        "--name=five",
        "--data=project.data.FileDataModule",
        "--data.path=five.npz",
        "--init_from=runs/digits/version_0",
    ]
    fit = run("fit", *five, "--freeze=[network.features]", *ONE_EPOCH_TWO_BATCHES)
    line = init_line(capsys.readouterr().out)
    assert line.startswith("init from runs/digits/version_0/checkpoints/best.ckpt: 16 of 18 weights loaded")
    assert "left as initialized: network.head.1.weight (5, 64) (there (10, 64)), network.head.1.bias (5,)" in line
    assert "frozen: network.features" in line
    origin = load("runs/digits/version_0/checkpoints/best.ckpt")["state_dict"]
    tuned = load("runs/five/version_0/checkpoints/last.ckpt")
    assert all(torch.equal(tuned["state_dict"][k], v) for k, v in origin.items() if k.startswith("network.features"))
    assert fit.model.hparams.num_classes == 5 and tuned["global_step"] == 2  # its own steps, from 0

    run("fit", f"--model={__name__}.DigitValue", "--data=project.data.DigitsDataModule", "--name=value",
        "--best_checkpoint.monitor=val/loss", "--best_checkpoint.mode=min", "--init_from=runs/digits/version_0",
        *ONE_EPOCH_TWO_BATCHES)  # fmt: skip
    line = init_line(capsys.readouterr().out)
    assert "left as initialized: network.head.1.weight (1, 64) (there (10, 64)), network.head.1.bias (1,)" in line
    summary = json.loads(Path("runs/value/version_0/summary.json").read_text())
    assert summary["config"]["init_from"] == "runs/digits/version_0"


@pytest.mark.slow
def test_the_digits_recipe_cross_validated():
    done = run_subprocess("cv", "--folds=2", "--test=true", f"--args=[{','.join(ONE_EPOCH_TWO_BATCHES)}]")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(Path("runs/digits/cv-cv/cv.json").read_text())
    assert result["monitor"] == "val/acc" and set(result["summary"]) >= {"val/acc", "test/acc"}
    for k, row in enumerate(result["folds"]):
        hparams = load(Path(row["run"]) / "checkpoints/best.ckpt")["datamodule_hyper_parameters"]
        assert (hparams["folds"], hparams["fold"]) == (2, k)
        assert 0 <= row["val/acc"] <= 1
    assert f"{result['summary']['val/acc']['mean']:.4f}" in done.stdout


def test_a_frozen_part_that_does_not_exist_is_one_line(capsys):
    from support import refusal

    line = refusal(capsys, lambda: run("fit", "--freeze=[network.body]", *ONE_EPOCH_TWO_BATCHES))
    assert line == "error: --freeze: 'network.body' is no submodule of DigitsClassifier"
    assert not Path("runs").exists()
