"""A checkpoint edited by hand or written by another version is one line, exit 2, with no run folder left (issue 31,
item 5): its `pytorch-lightning_version` changed or missing, a weight it holds that the model has not, no optimizer
state, and an optimizer state of other shapes than the parameters', which the fused Adam step wrote past (a
segfault, exit 139)."""

import shutil
from pathlib import Path

import pytest
import torch

from support import assert_kept, each_row_once_daily, load, refusal, run, snapshot, working_directory

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]
CRASH = ["--trainer.callbacks+=support.CrashAt", "--trainer.callbacks.step=2"]  # as the second epoch begins
LAST = Path("runs/digits/version_0/checkpoints/last.ckpt")
VERSION = "pytorch-lightning_version"
SAVED_AS_IT_WAS = "give the file as the run that wrote it saved it"
TRAIN_ANEW = "resume from the checkpoint as its run saved it, or drop --ckpt_path to train anew"


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> Path:
    """runs/ of a run stopped after the first of its 2 epochs: a fit resumes its last.ckpt."""
    home = tmp_path_factory.mktemp("stopped")
    with working_directory(home), pytest.raises(RuntimeError, match="crash"):
        run("fit", *SHORT, *CRASH)
    return home / "runs"


@pytest.fixture
def checkpoint(stopped) -> dict:
    shutil.copytree(stopped, "runs")
    return load(LAST)


def edit(checkpoint: dict, change: str) -> None:
    optimizer = checkpoint["optimizer_states"][0]
    if change == "older version":  # a 2.x layout under a 1.x version: Lightning's upgrade of its loops failed
        checkpoint[VERSION] = "1.0.0"
    elif change == "no version":
        del checkpoint[VERSION]
    elif change == "no version number":
        checkpoint[VERSION] = "banana"
    elif change == "extra weight":
        checkpoint["state_dict"]["network.extra.weight"] = torch.zeros(3)
    elif change == "no optimizer":
        del checkpoint["optimizer_states"]
    elif change == "no optimizer states":  # Lightning zipped them with the optimizer: a fresh one, silently
        checkpoint["optimizer_states"] = []
    elif change == "moments of another shape":  # of the last weight decayed: the classifier's, (10, 64)
        index = optimizer["param_groups"][0]["params"][-1]
        optimizer["state"][index] |= {"exp_avg": torch.zeros(3, 3), "exp_avg_sq": torch.zeros(3, 3)}
    elif change == "a parameter more":
        optimizer["param_groups"][0]["params"].append(99)


def said(change: str) -> str:
    """The line after `error: --ckpt_path edited.ckpt: `."""
    return {
        "older version": f"its {VERSION} 1.0.0 does not match what it holds (Lightning's upgrade from it: KeyError"
        " 'epoch_loop.batch_loop.optimizer_loop.optim_progress'); " + SAVED_AS_IT_WAS,
        "no version": f"it holds no {VERSION}, which every checkpoint Lightning writes holds; " + SAVED_AS_IT_WAS,
        "no version number": f"its {VERSION} 'banana' is not a version number; " + SAVED_AS_IT_WAS,
        "extra weight": "not a checkpoint of this model (it holds network.extra.weight, which this model has not)",
        "no optimizer": "it holds no optimizer state (the weights alone, as save_weights_only writes), so a fit cannot"
        " continue it; test or predict with it, or drop --ckpt_path to train anew",
        "no optimizer states": "it holds 0 optimizer states, the model configures 1 optimizers; " + TRAIN_ANEW,
        "moments of another shape": "its optimizer state 0 does not fit this model (exp_avg of network.head.1.weight is"
        " (3, 3) there, (10, 64) here); " + TRAIN_ANEW,
        "a parameter more": "its optimizer state 0 does not fit this model (group 0 has 4 parameters there, 3 here); "
        + TRAIN_ANEW,
    }[change]


CHANGES = ["older version", "no version", "no version number", "extra weight"]
RESUME_ONLY = ["no optimizer", "no optimizer states", "moments of another shape", "a parameter more"]


@pytest.mark.parametrize("change,subcommand", each_row_once_daily(CHANGES, ["fit", "test"]))
def test_a_checkpoint_of_another_version_or_with_a_weight_more_is_refused_before_it_is_loaded(
    checkpoint, change, subcommand, capsys
):
    edit(checkpoint, change)
    torch.save(checkpoint, "edited.ckpt")
    before = snapshot()
    error = refusal(capsys, lambda: run(subcommand, "--ckpt_path=edited.ckpt", *SHORT))
    assert error == f"error: --ckpt_path edited.ckpt: {said(change)}"
    assert not assert_kept(before, snapshot()), "no run folder"


@pytest.mark.parametrize("change", RESUME_ONLY)
def test_a_resume_whose_optimizer_state_does_not_fit_the_model_is_refused_before_the_optimizer_loads_it(
    checkpoint, change, capsys
):
    edit(checkpoint, change)
    torch.save(checkpoint, "edited.ckpt")
    before = snapshot()
    error = refusal(capsys, lambda: run("fit", "--ckpt_path=edited.ckpt", *SHORT))
    assert error == f"error: --ckpt_path edited.ckpt: {said(change)}"
    assert not assert_kept(before, snapshot()), "the run folder it began is removed again"


def test_a_checkpoint_of_a_newer_lightning_with_the_same_layout_still_resumes(checkpoint):
    checkpoint[VERSION] = "9.9.9"  # Lightning warns, and reads it
    torch.save(checkpoint, "newer.ckpt")
    with pytest.warns(UserWarning, match="newer than your current Lightning version"):
        cli = run("fit", "--ckpt_path=newer.ckpt", *SHORT)
    assert cli.trainer.global_step == 4


def test_the_weights_alone_still_evaluate(checkpoint):
    edit(checkpoint, "no optimizer")
    torch.save(checkpoint, "weights.ckpt")
    cli = run("test", "--ckpt_path=weights.ckpt")
    assert "test/acc" in cli.trainer.callback_metrics
