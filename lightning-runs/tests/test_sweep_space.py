"""A sweep's search space is checked before any trial runs (issue 31, item 5): a range with low above high, a list
of no choices or a log range from 0 failed every trial with Optuna's traceback, each recorded in the study; an
unknown kind of values got "unknown option --space.distribution". Each is one line naming the option (Optuna's own
check, said before any trial, where it has one), exit 2, and nothing is written (no study file, no runs/)."""

from pathlib import Path

import pytest
import yaml
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from lightning_runs.sweeps.space import corners, search_space
from lightning_runs.tools import sweep
from tiny_tasks import cli_main

SPACES = [
    ({"model.lr": {"low": 0.1, "high": 0.001}}, "--space model.lr: `low <= high` must hold, but got (low=0.1, high="),
    ({"data.batch_size": {"low": 64, "high": 32}}, "--space data.batch_size: `low <= high` must hold, but got (low=64"),
    ({"data.batch_size": {"choices": []}}, "--space data.batch_size: The `choices` must contain one or more elements"),
    ({"data.batch_size": {"choices": 32}}, "--space data.batch_size: choices must be a list, got 32"),
    ({"model.lr": {"low": 0.0, "high": 0.1, "log": True}}, "--space model.lr: `low > 0` must hold for `log=True`"),
    ({"model.lr": {"low": "a", "high": 0.1}}, "--space model.lr: low and high must be finite numbers"),
    ({"model.lr": {"low": 0.001, "high": float("inf")}}, "--space model.lr: low and high must be finite numbers"),
    ({"model.lr": {"low": 0.001, "high": 0.1, "log": "yes"}}, "--space model.lr: log must be true or false"),
    ({"model.lr": {"distribution": "normal", "mean": 0.01}}, "--space model.lr: {'distribution': 'normal', 'mean'"),
    ({"model.lr": {"low": 0.001, "high": 0.1, "step": 0.01}}, "is neither a range ({low: 0.001, high: 0.1}, with"),
    ({"model.lr": 0.01}, "--space model.lr: 0.01 is neither a range"),
    ({}, "--space {}: give at least one option to search"),
    # parsed as the trials' fit parses it, at each end and choice
    ({"trainer.max_epochz": {"low": 1, "high": 3}}, "unknown option --trainer.max_epochz: did you mean --trainer.max"),
]
IDS = ["low_above_high", "ints_low_above_high", "no_choices", "choices_not_a_list", "log_from_0", "not_numbers",
       "infinite", "log_not_a_bool", "unknown_kind", "unknown_key", "not_a_mapping", "empty",
       "misspelt_option"]  # fmt: skip


@pytest.mark.parametrize("space,said", SPACES, ids=IDS)
def test_a_malformed_search_space_is_one_line_before_any_trial(space, said, capsys):
    Path("study.yaml").write_text(yaml.safe_dump({"study": "s", "n_trials": 1, "space": space}))
    with pytest.raises(SystemExit) as exit_:
        sweep.main(cli_main, ["--config", "study.yaml"])
    err = capsys.readouterr()
    assert exit_.value.code == 2 and "Traceback" not in err.err, err.err[-2000:]
    (line,) = err.err.splitlines()
    assert line.startswith("error: ") and said in line
    assert "Trial" not in err.out and not Path("runs").exists(), "no trial, no study file"


def test_a_well_formed_space_becomes_optunas_distributions_integers_where_both_ends_are():
    space = {
        "model.lr": {"low": 1e-3, "high": 0.1, "log": True},
        "data.batch_size": {"choices": [16, 32]},
        "data.n": {"low": 64, "high": 256},
    }
    assert search_space(space) == {
        "model.lr": FloatDistribution(1e-3, 0.1, log=True),
        "data.batch_size": CategoricalDistribution([16, 32]),
        "data.n": IntDistribution(64, 256),
    }


@pytest.mark.parametrize(
    "space,said",
    [
        (
            {"model.label_smoothing": {"low": 0.0, "high": 5.0}},
            "--model.label_smoothing: Not of type ClosedUnitInterval: 5.0",
        ),
        ({"data.batch_size": {"choices": [16, 32, "abc"]}}, "--data.batch_size: expected int"),
    ],
    ids=["high_end", "last_choice"],
)
def test_every_end_and_choice_is_parsed_as_the_trials_fit_parses_it_before_any_trial(space, said, capsys):
    """Parsed at their low ends alone, these passed, and the trials that sampled them failed one by one."""
    config = {"study": "s", "n_trials": 1, "args": ["--model=tiny_typed.TypedClassifier"], "space": space}
    Path("study.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(SystemExit) as exit_:
        sweep.main(cli_main, ["--config", "study.yaml"])
    err = capsys.readouterr()
    assert exit_.value.code == 2 and said in err.err and "Traceback" not in err.err, err.err[-2000:]
    assert "Trial" not in err.out and not Path("runs").exists(), "no trial, no study file"


def test_the_fits_that_check_a_space_give_each_option_every_end_and_choice():
    space = {"model.lr": FloatDistribution(0.001, 0.1), "data.batch_size": CategoricalDistribution([16, 32, 64])}
    assert corners(space) == [
        ["--model.lr=0.001", "--data.batch_size=16"],
        ["--model.lr=0.1", "--data.batch_size=32"],
        ["--model.lr=0.1", "--data.batch_size=64"],
    ]


def test_a_misspelt_fit_option_given_unwrapped_is_one_line_before_any_trial(capsys):
    Path("study.yaml").write_text(
        yaml.safe_dump({"study": "s", "n_trials": 1, "space": {"model.lr": {"low": 0.001, "high": 0.1}}})
    )
    with pytest.raises(SystemExit) as exit_:
        sweep.main(cli_main, ["--config", "study.yaml", "--trainer.max_epochz", "3"])
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2 and line.endswith(
        "unknown option --trainer.max_epochz: did you mean --trainer.max_epochs?"
    )
    assert not Path("runs").exists(), "no trial, no study file"
