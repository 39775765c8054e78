"""A fit started by a sweep worker reports to its trial (sweeps/trial.py): its run folder, the monitored metric
of every validation, and a stop at the end of the epoch its pruner prunes it; any other fit imports no Optuna."""

import json
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_runs.errors import main
from lightning_runs.sweeps.trial import VARIABLE
from tiny_tasks import TinyClassifier, cli_main

QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
THREE_EPOCHS = ["--trainer.max_epochs=3", "--trainer.limit_train_batches=2"]
NEVER_PRUNE = {"n_startup_trials": 100, "n_warmup_steps": 0}


STORAGE = "sqlite:///study.db"  # in the test's own folder


def fit_as_trial(
    monkeypatch, study: optuna.Study, pruner: dict, *args: str, metric="val/loss", direction="minimize", checkpoint=None
) -> optuna.trial.FrozenTrial:
    """`python -m <package> fit <args>` as a sweep worker starts it for a new trial of `study`, scored by `metric` in
    `direction` (taken from the recipe's `checkpoint`: [monitor, mode or None], or given: None): the trial, once it
    ended."""
    trial = study.ask()
    reporting = {"storage": STORAGE, "study": study.study_name, "trial_id": trial._trial_id, "metric": metric}
    reporting |= {"direction": direction, "checkpoint": checkpoint, "pruner": pruner}
    monkeypatch.setenv(VARIABLE, json.dumps(reporting))
    main(lambda: cli_main(["fit", *QUIET, *THREE_EPOCHS, *args]))
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


class StatesAccuracy(TinyClassifier):
    """Its own best checkpoint, by `val/acc` (max), whatever the recipe monitors."""

    def configure_callbacks(self):
        return [ModelCheckpoint(monitor="val/acc", mode="max")]


@pytest.mark.parametrize(
    "args,scored,said",
    [
        (  # a metric the model does not log, given
            [], ("val/f1", "maximize", None),
            "the sweep scores val/f1 (max), which tiny_tasks.TinyClassifier does not log (its validation metrics:"
            " val/acc, val/loss): give --metric val/loss --direction minimize",
        ),
        (  # the recipe's default, which the run does not watch: it follows val_loss
            ["--model=tiny_tasks.UnderscoreNames"], ("val/loss", "minimize", ["val/loss", "min"]),
            "the sweep scores val/loss (min), which tiny_tasks.UnderscoreNames does not log (its validation metrics:"
            " val_acc, val_loss): give --metric val_loss --direction minimize",
        ),
        (  # the recipe's default, logged, but the model's own checkpoint watches another
            ["--model=test_trial.StatesAccuracy"], ("val/loss", "minimize", ["val/loss", "min"]),
            "the sweep scores val/loss (min), the recipe's --best_checkpoint.monitor, but test_trial.StatesAccuracy's best"
            " checkpoint watches val/acc (max): give --metric val/acc --direction maximize, or --metric val/loss"
            " --direction minimize to score val/loss all the same",
        ),
        (  # no validation metric at all
            ["--model=tiny_tasks.Unvalidated"], ("val/loss", "minimize", ["val/loss", "min"]),
            "the sweep scores val/loss (min), which tiny_tasks.Unvalidated does not log (it logs no validation"
            " metric): log one in its validation_step (self.log('val/loss', ...)) to sweep it",
        ),
    ],
    ids=["given_not_logged", "default_followed_elsewhere", "model_states_another", "no_validation_metric"],
)  # fmt: skip
def test_a_trial_that_cannot_be_scored_as_its_sweep_scores_is_refused_before_training(
    study, monkeypatch, capsys, args, scored, said
):
    metric, direction, checkpoint = scored
    with pytest.raises(SystemExit) as exit_:
        fit_as_trial(monkeypatch, study, NEVER_PRUNE, *args, metric=metric, direction=direction, checkpoint=checkpoint)
    assert exit_.value.code == 2
    (trial,) = study.get_trials()
    assert trial.user_attrs["refused"] == said, "the line its worker says"
    assert trial.intermediate_values == {}, "refused after the sanity check, before any epoch"
    assert not Path("runs/tiny/version_0").exists(), "a refusal leaves no run folder"
    assert "error:" not in capsys.readouterr().err, "the worker says it, once"


def test_a_trial_scored_on_what_its_best_checkpoint_follows_runs(study, monkeypatch):
    trial = fit_as_trial(monkeypatch, study, NEVER_PRUNE, "--model=tiny_tasks.UnderscoreNames", metric="val_loss")
    assert sorted(trial.intermediate_values) == [0, 1, 2] and "refused" not in trial.user_attrs


@pytest.mark.slow
def test_a_fit_outside_a_sweep_imports_no_optuna():
    code = "import sys, lightning_runs, lightning_runs.cli.runs_cli; sys.exit('optuna' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
