"""A checkpoint edited by hand, written by another version or made hostile is one line, exit 2, before it is loaded and
with no run folder left (issues 13 item 7, 31 item 5): its `pytorch-lightning_version` changed or missing, a weight it
holds that the model has not, one of another shape or missing, no optimizer state, an optimizer state of other shapes
than the parameters' (the fused Adam step wrote past it: a segfault, exit 139), a field of the wrong type, a module
named to import, NaN weights to evaluate."""

import shutil
import sys
from pathlib import Path

import pytest
import torch
from tiny_networks import WithNetwork
from tiny_runs import assert_kept, each_row_once_daily, load, refusal, run, snapshot
from tiny_stops import CrashAt

from lightning_runs.checkpoints.loading import read_checkpoint
from lightning_runs.errors import UsageError

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]
LAST = Path("runs/tiny/version_0/checkpoints/last.ckpt")
VERSION = "pytorch-lightning_version"
SAVED_AS_IT_WAS = "give the file as the run that wrote it saved it"
TRAIN_ANEW = "resume from the checkpoint as its run saved it, or drop --ckpt_path to train anew"


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


def edit(checkpoint: dict, change: str) -> None:
    optimizer = checkpoint["optimizer_states"][0]
    if change == "older version":  # a 2.x layout under a 1.x version: Lightning's upgrade of its loops failed
        checkpoint[VERSION] = "1.0.0"
    elif change == "no version":
        del checkpoint[VERSION]
    elif change == "no version number":
        checkpoint[VERSION] = "banana"
    elif change == "extra weight":
        checkpoint["state_dict"]["layer.extra.weight"] = torch.zeros(3)
    elif change == "no optimizer":
        del checkpoint["optimizer_states"]
    elif change == "no optimizer states":  # Lightning zipped them with the optimizer: a fresh one, silently
        checkpoint["optimizer_states"] = []
    elif change == "moments of another shape":  # of the last parameter: the layer's bias, (3,)
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
        "extra weight": "not a checkpoint of this model (it holds layer.extra.weight, which this model has not)",
        "no optimizer": "it holds no optimizer state (the weights alone, as save_weights_only writes), so a fit cannot"
        " continue it; test or predict with it, or drop --ckpt_path to train anew",
        "no optimizer states": "it holds 0 optimizer states, the model configures 1 optimizers; " + TRAIN_ANEW,
        "moments of another shape": "its optimizer state 0 does not fit this model (exp_avg of layer.bias is (3, 3)"
        " there, (3,) here); " + TRAIN_ANEW,
        "a parameter more": "its optimizer state 0 does not fit this model (group 0 has 3 parameters there, 2 here); "
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


TAMPERS = [
    ("hyper_parameters", {"network": {"class_path": "this.Zen", "init_args": {}}}, "'this.Zen', which is not a class"),
    ("hyper_parameters", {"network": "this.Zen"}, "'this.Zen', which is not a class"),
    ("hyper_parameters", {"network": {"class_path": "antigravity.Fly"}}, "'antigravity.Fly', which is not a class"),
    ("datamodule_hyper_parameters", {"_class_path": "this.Zen"}, "its datamodule_hyper_parameters name 'this.Zen'"),
]


@pytest.mark.parametrize("section,tamper,expected", TAMPERS)
def test_a_checkpoint_naming_a_module_is_refused_before_that_module_is_imported(
    checkpoint, section, tamper, expected, capsys
):
    checkpoint[section].update(tamper)
    torch.save(checkpoint, "tampered.ckpt")
    assert "this" not in sys.modules and "antigravity" not in sys.modules
    before = snapshot()
    error = refusal(capsys, lambda: run("test", "--ckpt_path=tampered.ckpt"))
    assert "refusing to load" in error and expected in error
    assert "this" not in sys.modules and "antigravity" not in sys.modules, "imported before being refused"
    assert "Beautiful is better than ugly" not in capsys.readouterr().out
    assert not assert_kept(before, snapshot())


def edited(checkpoint: dict, field: str):
    """Give `field` of the checkpoint a value of another type, as a hand edit might."""
    random_state = next(key for key in checkpoint["callbacks"] if key.startswith("RandomState"))
    edits = {
        "epoch": lambda: checkpoint.update(epoch="3"),
        "hyper_parameters": lambda: checkpoint.update(hyper_parameters=["lr", 0.01]),
        "callbacks": lambda: checkpoint.update(callbacks=list(checkpoint["callbacks"])),
        "loops": lambda: checkpoint.update(loops=None),
        "optimizer": lambda: checkpoint["optimizer_states"][0].update(param_groups={"lr": 0.01}),
        "rng": lambda: checkpoint["callbacks"][random_state].update(torch=[1, 2, 3]),
        "weights": lambda: checkpoint["state_dict"].update({next(iter(checkpoint["state_dict"])): [0.0]}),
    }
    edits[field]()
    return checkpoint


EDITS = {
    "epoch": "its epoch is str, not int",
    "hyper_parameters": "its hyper_parameters is list, not dict",
    "callbacks": "its callbacks is list, not dict",
    "loops": "its loops is NoneType, not dict",
    "optimizer": "its optimizer_states[0]['param_groups'] is dict, not list",
    "rng": "['torch'] is list, not Tensor",
    "weights": "is list, not Tensor",
}


# Each field read by fit and by test: daily, each field once, the two in turn.
@pytest.mark.parametrize("field,subcommand", each_row_once_daily(list(EDITS), ["fit", "test"]))
def test_a_checkpoint_edited_to_hold_a_field_of_the_wrong_type_is_refused_where_it_is_read(
    checkpoint, field, subcommand, capsys
):
    torch.save(edited(checkpoint, field), "edited.ckpt")
    before = snapshot()
    error = refusal(capsys, lambda: run(subcommand, "--ckpt_path=edited.ckpt"))
    assert error.startswith("error: --ckpt_path edited.ckpt: its ") and EDITS[field] in error
    assert error.endswith(", so it cannot be restored")
    assert not assert_kept(before, snapshot())


@pytest.mark.parametrize("change", ["shape", "missing"])
def test_a_checkpoint_with_weights_of_another_shape_or_missing_ones_is_refused_before_it_is_loaded(
    checkpoint, change, capsys
):
    name = next(name for name in checkpoint["state_dict"] if name.endswith("weight"))
    if change == "shape":
        checkpoint["state_dict"][name] = torch.zeros(3, 3)
    else:
        del checkpoint["state_dict"][name]
    torch.save(checkpoint, "changed.ckpt")
    before = snapshot()
    error = refusal(capsys, lambda: run("test", "--ckpt_path=changed.ckpt"))
    said = f"its model does not fit this data ({name} is (3, 3) there" if change == "shape" else f"(no {name})"
    assert error.startswith("error: --ckpt_path changed.ckpt: ") and said in error
    assert not assert_kept(before, snapshot())


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


@pytest.mark.parametrize("subcommand", ["test", "predict"])
def test_evaluating_a_checkpoint_with_nan_weights_is_refused_instead_of_a_nan_score(checkpoint, subcommand, capsys):
    name = next(name for name in checkpoint["state_dict"] if name.endswith("weight"))
    checkpoint["state_dict"][name][0] = float("nan")
    torch.save(checkpoint, "nan.ckpt")
    before = snapshot()
    error = refusal(capsys, lambda: run(subcommand, "--ckpt_path=nan.ckpt"))
    assert error == (
        f"error: --ckpt_path nan.ckpt: its weights hold NaN or infinite values ({name}), so every score and"
        " prediction would be NaN; evaluate a checkpoint saved before the run diverged"
    )
    assert not assert_kept(before, snapshot()), "no run folder, no summary"
