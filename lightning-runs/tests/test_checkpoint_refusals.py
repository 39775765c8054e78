"""A checkpoint that does not fit the command is one line, exit 2, with no run folder left: weights of another shape,
a weight more or one missing (torch's own check, said by the entry point), the weights alone given to a fit; a
checkpoint of a newer Lightning with the same layout still resumes, and the weights alone still evaluate."""

import shutil
from pathlib import Path

import pytest
import torch
from tiny_runs import assert_kept, load, refusal, run, snapshot

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]
LAST = Path("runs/tiny/version_0/checkpoints/last.ckpt")


@pytest.fixture
def checkpoint(stopped) -> dict:
    shutil.copytree(stopped, "runs")
    return load(LAST)


@pytest.mark.parametrize("change", ["shape", "missing", "extra"])
@pytest.mark.parametrize("subcommand", ["fit", "test"])
def test_weights_that_do_not_fit_the_model_are_one_line_and_leave_no_run_folder(checkpoint, change, subcommand, capsys):
    name = next(name for name in checkpoint["state_dict"] if name.endswith("weight"))
    if change == "shape":
        checkpoint["state_dict"][name] = torch.zeros(3, 3)
    elif change == "missing":
        del checkpoint["state_dict"][name]
    else:
        checkpoint["state_dict"]["layer.extra.weight"] = torch.zeros(3)
    torch.save(checkpoint, "changed.ckpt")  # loose: outside any run, so the command makes a run of its own
    before = snapshot()
    error = refusal(capsys, lambda: run(subcommand, "--ckpt_path=changed.ckpt", *SHORT))
    assert error.startswith("error: the checkpoint's weights do not fit the model (Error(s) in loading state_dict")
    assert not assert_kept(before, snapshot()), "no run folder"


def test_the_weights_alone_evaluate_and_a_fit_of_them_is_one_line(checkpoint, capsys):
    del checkpoint["optimizer_states"]
    torch.save(checkpoint, LAST.parent / "weights.ckpt")
    assert "test/acc" in run("test", f"--ckpt_path={LAST.parent / 'weights.ckpt'}").trainer.callback_metrics
    before = snapshot()
    error = refusal(capsys, lambda: run("fit", *SHORT, f"--ckpt_path={LAST.parent / 'weights.ckpt'}"))
    assert "the weights alone (save_weights_only); a fit cannot continue it, a test can" in error
    assert not assert_kept(before, snapshot())


def test_a_checkpoint_of_a_newer_lightning_with_the_same_layout_still_resumes(checkpoint):
    checkpoint["pytorch-lightning_version"] = "9.9.9"  # Lightning warns, and reads it
    torch.save(checkpoint, LAST)
    with pytest.warns(UserWarning, match="newer than your current Lightning version"):
        cli = run("fit", "--ckpt_path=last", *SHORT)
    assert cli.trainer.global_step == 4
