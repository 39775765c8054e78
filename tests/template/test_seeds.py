"""`python -m project seeds`: a config over several seeds, tested, beside scikit-learn on the same splits."""

import json
from pathlib import Path

import pytest

from lightning_runs.tools.seeds import evaluate_seeds

from project.cli import cli_main

from support import DEFAULT

pytestmark = pytest.mark.slow
TWO_EPOCHS_FIVE_BATCHES = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=5"]
SHORT = {"configs": [Path(DEFAULT)], "args": TWO_EPOCHS_FIVE_BATCHES, "baselines": "classification"}  # as make runs it


def test_each_seed_sets_split_and_initialisation_and_is_compared_with_the_baselines(capsys):
    result = evaluate_seeds(cli_main, seeds=[0, 1], name="short", **SHORT)
    rows = result["seeds"]
    assert [row["seed"] for row in rows] == [0, 1]
    assert all(0 < row["test_acc"] <= 1 and 0.9 < row["svc_acc"] <= 1 for row in rows)
    assert rows[0]["svc_acc"] != rows[1]["svc_acc"], "a different split per seed"
    assert set(result["summary"]["test_acc"]) == {"mean", "median", "std"}
    assert json.loads(Path("runs/short.json").read_text()) == json.loads(json.dumps(result))
    table = capsys.readouterr().out
    header = next(line.split(" | ") for line in table.splitlines() if line.startswith("seed | "))
    assert {"test_acc", "svc_acc", "logistic_regression_acc"} <= set(header) and "median" in table


def test_two_runs_of_the_same_seed_give_identical_numbers():
    first, second = (evaluate_seeds(cli_main, seeds=[3], name=n, **SHORT) for n in "ab")
    keys = ("test_acc", "best_val_acc", "svc_acc", "logistic_regression_acc", "epochs")
    assert [first["seeds"][0][k] for k in keys] == [second["seeds"][0][k] for k in keys]
