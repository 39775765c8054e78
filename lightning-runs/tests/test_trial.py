"""A fit started by a sweep worker reports to its trial (sweeps/trial.py): its run folder, the sweep's metric at every
validation, and a stop at the end of the epoch its pruner prunes it; a fit whose validation does not log the sweep's
metric is refused after its sanity check, before any epoch; any other fit imports no Optuna."""

import json
import shutil
from pathlib import Path

import optuna
import pytest
from tiny_runs import QUIET

from lightning_runs.errors import main
from tiny_tasks import cli_main

THREE_EPOCHS = ["--trainer.max_epochs=3", "--trainer.limit_train_batches=2"]
NEVER_PRUNE = {"n_startup_trials": 100, "n_warmup_steps": 0}


STORAGE = "sqlite:///study.db"  # in the test's own folder


def fit_as_trial(study: optuna.Study, pruner: dict, *args: str, metric="val/loss") -> optuna.trial.FrozenTrial:
    """`python -m <package> fit <args>` as a sweep worker starts it for a new trial of `study`, scored by `metric`
    (its callback on the command line, as any callback): the trial, once it ended."""
    trial = study.ask()
    reporting = {"storage": STORAGE, "study": study.study_name, "trial_id": trial._trial_id, "metric": metric}
    callback = {"class_path": "lightning_runs.sweeps.trial.ReportToTrial", "init_args": {**reporting, "pruner": pruner}}
    main(lambda: cli_main(["fit", *QUIET, *THREE_EPOCHS, *args, f"--trainer.callbacks+={json.dumps(callback)}"]))
    return next(t for t in study.get_trials() if t.number == trial.number)  # unfinished: read from the file


@pytest.fixture
def study() -> optuna.Study:
    return optuna.create_study(storage=STORAGE, study_name="s", direction="minimize")


@pytest.fixture(scope="module")
def reported(tmp_path_factory) -> tuple[Path, optuna.trial.FrozenTrial]:
    """A folder holding a study and the run of its one trial, fitted to its end unpruned and scored on val/acc, which
    the recipe's monitors do not watch (the tests read it or copy it): the folder and the trial."""
    home = tmp_path_factory.mktemp("reported")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        study = optuna.create_study(storage=STORAGE, study_name="s", direction="minimize")
        return home, fit_as_trial(study, NEVER_PRUNE, metric="val/acc")  # the recipe's monitors watch val/loss


def test_a_trial_reports_its_run_folder_and_every_epochs_metric(reported):
    _, trial = reported
    assert trial.user_attrs["run"] == "runs/tiny/version_0"
    assert sorted(trial.intermediate_values) == [0, 1, 2], "one report per epoch, none for the sanity check"
    assert "pruned_at_epoch" not in trial.user_attrs


def test_a_trials_run_validates_later_as_any_run_reporting_nothing_more(reported):
    home, trial = reported
    shutil.copytree(home, ".", dirs_exist_ok=True)  # the study and the run: the run's config names the study's file
    assert "ReportToTrial" in Path(trial.user_attrs["run"], "config.yaml").read_text(), "on its command line"
    main(lambda: cli_main(["validate", *QUIET, f"--ckpt_path={trial.user_attrs['run']}/checkpoints/best.ckpt"]))
    study = optuna.load_study(storage=STORAGE, study_name="s")
    assert study.get_trials()[0].intermediate_values == trial.intermediate_values


def test_a_trial_worse_than_the_median_stops_at_the_end_of_the_epoch_it_is_pruned(study):
    study.add_trial(  # a finished trial far better at every epoch
        optuna.trial.create_trial(value=0.0, intermediate_values={0: 0.0, 1: 0.0, 2: 0.0})
    )
    trial = fit_as_trial(study, {"n_startup_trials": 1, "n_warmup_steps": 0})
    assert trial.user_attrs["pruned_at_epoch"] == 0
    assert list(trial.intermediate_values) == [0]
    summary = json.loads(Path(trial.user_attrs["run"], "summary.json").read_text())
    assert summary["epochs"] == 1, "stopped after the epoch it was pruned"
    assert Path(trial.user_attrs["run"], "checkpoints/last.ckpt").is_file()


@pytest.mark.parametrize(
    "args,metric,said",
    [
        (  # a metric the model does not log
            [], "val/f1",
            "the sweep scores val/f1, which TinyClassifier does not log in validation (it logs: val/acc, val/loss);"
            " give --metric <one of them> and its --direction",
        ),
        (  # no validation metric at all (nor monitors that would refuse the fit first)
            ["--model=tiny_tasks.Unvalidated", "--early_stopping=null", "--best_checkpoint=null"], "val/loss",
            "the sweep scores val/loss, which Unvalidated does not log in validation (it logs: nothing); give --metric"
            " <one of them> and its --direction",
        ),
    ],
    ids=["not_logged", "no_validation_metric"],
)  # fmt: skip
def test_a_trial_whose_validation_does_not_log_the_sweeps_metric_is_refused_before_training(
    study, capsys, args, metric, said
):
    with pytest.raises(SystemExit) as exit_:
        fit_as_trial(study, NEVER_PRUNE, *args, metric=metric)
    assert exit_.value.code == 2
    (trial,) = study.get_trials()
    assert trial.user_attrs["refused"] == said, "the line its worker says"
    assert trial.intermediate_values == {}, "refused after the sanity check, before any epoch"
    assert not Path("runs/tiny/version_0").exists(), "a refusal leaves no run folder"
    assert "error:" not in capsys.readouterr().err, "the worker says it, once"


def test_a_trial_may_be_scored_on_any_metric_its_validation_logs_not_only_a_monitored_one(reported):
    _, trial = reported  # scored on val/acc
    assert sorted(trial.intermediate_values) == [0, 1, 2] and "refused" not in trial.user_attrs


@pytest.mark.slow
def test_a_fit_outside_a_sweep_imports_no_optuna(modules_imported):
    assert "lightning_runs.cli.runs_cli" in modules_imported["cli"]
    assert "optuna" not in modules_imported["cli"]
