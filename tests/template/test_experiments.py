"""New experiments without code changes: another network, a named experiment config, your own data file."""

from pathlib import Path

import numpy as np
import pytest

from project.data import DigitsDataModule, FileDataModule
from project.networks import MLP

from support import ONE_EPOCH_TWO_BATCHES, ROOT, run


def test_the_mlp_experiment_trains_an_mlp_into_its_own_runs_folder():
    cli = run("fit", "--config", str(ROOT / "configs/experiments/mlp.yaml"), *ONE_EPOCH_TWO_BATCHES)
    assert isinstance(cli.model.network, MLP)
    assert Path("runs/mlp/version_0/checkpoints/best.ckpt").is_file() and not Path("runs/digits").exists()
    assert "class_path: project.networks.MLP" in Path("runs/mlp/version_0/config.yaml").read_text()


def test_a_file_of_your_own_trains_with_its_class_count_and_is_tested_from_its_checkpoint():
    images, labels = DigitsDataModule().load()
    keep = labels < 3  # a three-class problem
    np.savez("three.npz", images=images[keep].numpy(), labels=labels[keep].numpy())

    own = ["--data", "project.data.FileDataModule", "--data.path", "three.npz", "--name", "three"]
    fit = run("fit", *own, *ONE_EPOCH_TWO_BATCHES)
    assert fit.model.hparams.num_classes == 3 and fit.model(images[:2]).shape == (2, 3)
    best = Path("runs/three/version_0/checkpoints/best.ckpt")  # the name given, not runs/digits/
    assert best.is_file() and not Path("runs/digits").exists()

    # No --data here: the run's config.yaml names its DataModule and file, so the same test split is scored.
    test = run("test", "--ckpt_path", str(best))
    assert isinstance(test.datamodule, FileDataModule) and test.datamodule.hparams.path == "three.npz"
    assert len(test.datamodule.splits["test"][1]) == round(keep.sum().item() * 0.1)
    assert "test/acc" in test.trainer.callback_metrics


def test_a_missing_file_of_your_own_is_one_clear_error(capsys):
    with pytest.raises(SystemExit) as exit:
        run("fit", "--data", "project.data.FileDataModule", "--data.path", "missing.npz", *ONE_EPOCH_TWO_BATCHES)
    assert exit.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == ["error: missing.npz: no such file"]
    assert not Path("runs").exists()
