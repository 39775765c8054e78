"""A fit started by a sweep worker reports to its trial (sweeps/trial.py): its run folder, the monitored metric
of every validation, and a stop at the end of the epoch its pruner prunes it; any other fit imports no Optuna."""

import json
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from lightning_runs.errors import main
from lightning_runs.sweeps.trial import VARIABLE
from tiny_tasks import cli_main

QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
THREE_EPOCHS = ["--trainer.max_epochs=3", "--trainer.limit_train_batches=2"]
NEVER_PRUNE = {"n_startup_trials": 100, "n_warmup_steps": 0}


STORAGE = "sqlite:///study.db"  # in the test's own folder


def fit_as_trial(monkeypatch, study: optuna.Study, pruner: dict) -> optuna.trial.FrozenTrial:
    """`python -m <package> fit` as a sweep worker starts it for a new trial of `study`: the trial, once it ended."""
    trial = study.ask()
    reporting = {"storage": STORAGE, "study": study.study_name, "trial_id": trial._trial_id, "metric": "val/loss"}
    monkeypatch.setenv(VARIABLE, json.dumps({**reporting, "pruner": pruner}))
    main(lambda: cli_main(["fit", *QUIET, *THREE_EPOCHS]))
    return next(t for t in study.get_trials() if t.number == trial.number)  # unfinished: read from the file


@pytest.fixture
def study() -> optuna.Study:
    return optuna.create_study(storage=STORAGE, study_name="s", direction="minimize")


def test_a_trial_reports_its_run_folder_and_every_epochs_metric(study, monkeypatch):
    trial = fit_as_trial(monkeypatch, study, NEVER_PRUNE)
    assert trial.user_attrs["run"] == "runs/tiny/version_0"
    assert sorted(trial.intermediate_values) == [0, 1, 2], "one report per epoch, none for the sanity check"
    assert "pruned_at_epoch" not in trial.user_attrs


def test_a_trial_worse_than_the_median_stops_at_the_end_of_the_epoch_it_is_pruned(study, monkeypatch):
    study.add_trial(  # a finished trial far better at every epoch
        optuna.trial.create_trial(value=0.0, intermediate_values={0: 0.0, 1: 0.0, 2: 0.0})
    )
    trial = fit_as_trial(monkeypatch, study, {"n_startup_trials": 1, "n_warmup_steps": 0})
    assert trial.user_attrs["pruned_at_epoch"] == 0
    assert list(trial.intermediate_values) == [0]
    summary = json.loads(Path(trial.user_attrs["run"], "summary.json").read_text())
    assert summary["epochs"] == 1, "stopped after the epoch it was pruned"
    assert Path(trial.user_attrs["run"], "checkpoints/last.ckpt").is_file()


@pytest.mark.slow
def test_a_fit_outside_a_sweep_imports_no_optuna():
    code = "import sys, lightning_runs, lightning_runs.cli.runs_cli; sys.exit('optuna' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
