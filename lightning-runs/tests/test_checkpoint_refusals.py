"""A checkpoint's saved parameters are judged before anything it names is imported: a dotted string of a parameter
typed as plain data is data (a file name), a class path must name a class."""

import shutil
import sys
from pathlib import Path

import pytest
import torch
from tiny_networks import WithNetwork
from tiny_runs import load, run

from lightning_runs.checkpoints.loading import read_checkpoint
from lightning_runs.errors import UsageError
from tiny_tasks import CrashAt

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]
LAST = Path("runs/tiny/version_0/checkpoints/last.ckpt")


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> Path:
    """runs/ of a run stopped after the first of its 2 epochs: a fit resumes its last.ckpt."""
    home = tmp_path_factory.mktemp("stopped")
    with pytest.MonkeyPatch.context() as patch, pytest.raises(RuntimeError, match="crash"):
        patch.chdir(home)
        run("fit", *SHORT, callbacks=[CrashAt(step=2)])  # as the second epoch begins
    return home / "runs"


@pytest.fixture
def checkpoint(stopped) -> dict:
    shutil.copytree(stopped, "runs")
    return load(LAST)


def test_dotted_strings_of_plain_parameters_are_data_and_real_classes_are_accepted(checkpoint, monkeypatch):
    # A file named like a module attribute ("test" is a standard-library package) is a path, not a reference; also
    # where the DataModule's module is not imported yet, as in a new process's `test --ckpt_path <file>`.
    monkeypatch.delitem(sys.modules, "tiny_files", raising=False)
    checkpoint["datamodule_hyper_parameters"] |= {"_class_path": "tiny_files.PointsFile", "path": "test.csv"}
    checkpoint["hyper_parameters"]["network"] = {"class_path": "tiny_networks.Hidden", "init_args": {}}
    torch.save(checkpoint, "plain.ckpt")
    assert read_checkpoint(Path("plain.ckpt"), WithNetwork)["datamodule_hyper_parameters"]["path"] == "test.csv"
    checkpoint["hyper_parameters"]["network"] = "tiny_networks.not_a_class_name"
    torch.save(checkpoint, "function.ckpt")
    with pytest.raises(UsageError, match="which is not a class"):
        read_checkpoint(Path("function.ckpt"), WithNetwork)
