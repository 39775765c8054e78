"""The example's own refusals of a run that would do nothing or crash later, before any folder exists (issue 13,
item 4): its splits and batch size (project/data.py), its data seed, its learning rates (project/model.py); and double
precision through its augmentation. The library's checks of the same kind: lightning-runs/tests/test_preflight.py."""

from pathlib import Path

import numpy as np
import pytest
import torch

from project.data import DigitsDataModule

from support import assert_kept, refusal, run, slow_repeats, snapshot

SHORT = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]

CASES = [
    ("fit", ["--data.batch_size=5000"], "--data.batch_size 5000: the train split has 1437 samples, not one full batch"),
    ("fit", ["TINY"], "--data.val_fraction 0.1: the val split of 3 samples is empty"),
    ("fit", ["--data.val_fraction=0.0001"], "--data.val_fraction 0.0001: the val split of 1797 samples is empty"),
    ("test", ["--data.test_fraction=0.0001"], "--data.test_fraction 0.0001: the test split of 1797 samples is empty"),
    # Typed options, in jsonargparse's own words after the option: the type and its bounds.
    ("fit", ["--data.seed=5000000000000000"], ("--data.seed: ", "Seed")),
    ("fit", ["--model.lr=inf"], ("--model.lr: ", "LearningRate", "v>0 and v<inf")),
    ("fit", ["--model.weight_decay=inf"], ("--model.weight_decay: ", "NonNegativeFinite", "v>=0 and v<inf")),
    ("fit", ["--data.rotation=inf"], ("--data.rotation: ", "NonNegativeFinite", "v>=0 and v<inf")),
    ("fit", ["--model.min_lr=0.1"], "--model.min_lr 0.1: above --model.lr 0.01; the schedule decays from lr"),
]


# Every day one case per check: the batch against the train split, an empty val split (fit) and test split (test),
# and each type's bound (Seed, NonNegativeFinite), min_lr against lr. Slow: a check again with other values; a
# learning rate's bound every day in test_recipe_arguments.py.
REPEATS = {
    "TINY": "--data.val_fraction=0.0001",
    "--data.rotation=inf": "--model.weight_decay=inf",
    "--model.lr=inf": "tests/template/test_recipe_arguments.py::test_an_argument_the_recipe_cannot_train_exits_2_with"
    "_one_line_before_creating_anything[--model.lr=0]",
}


@pytest.mark.parametrize("subcommand,args,expected", slow_repeats(CASES, [" ".join(c[1]) for c in CASES], REPEATS))
def test_a_command_that_would_do_nothing_or_crash_later_is_refused_first(subcommand, args, expected, capsys):
    if args == ["TINY"]:  # a dataset of three samples
        images = DigitsDataModule().load()[0][:3]
        np.savez("tiny.npz", images=images.numpy(), labels=np.array([0, 1, 0]))
        args = ["--data=project.data.FileDataModule", "--data.path=tiny.npz"]
    before = snapshot()
    line = refusal(capsys, lambda: run(subcommand, *SHORT, *args))
    option, *words = (expected,) if isinstance(expected, str) else expected
    assert line.startswith(f"error: {option}") and all(word in line for word in words), line
    assert not assert_kept(before, snapshot()) and not Path("runs").exists(), "no run folder left behind"


def test_double_precision_trains_instead_of_crashing_in_the_augmentation():
    fit = run("fit", *SHORT, "--trainer.precision=64")
    assert fit.trainer.state.finished and next(fit.model.parameters()).dtype == torch.float64
