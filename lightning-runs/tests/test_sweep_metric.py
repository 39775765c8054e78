"""What a sweep scores its trials by: `--metric` and `--direction` given, or else the monitor and mode of the trials'
best checkpoint in their resolved config; never a direction guessed for another metric, never a study scored one way
and then another, and a model that does not log what the sweep scores stops the worker after its first trial's sanity
check, not every trial trained to its end. (Each trial's own check: test_trial.py.) The refusals' sweeps parse their
trials' config once for the same options (tiny_runs.printed_once): what they refuse comes after it."""

import json
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from test_sweep_tool import (
    NO_PRUNING,
    TINY,
    open_study,
    study_config,
    sweep,
    trials_see_this_checkout,  # noqa: F401 - an autouse fixture: the trials import this checkout and tiny_tasks
)
from tiny_runs import printed_once, refusal

from lightning_runs.tools import sweep as sweep_tool
from lightning_runs.tools.fits import fit_config
from lightning_runs.tools.sweep import scored_by
from tiny_tasks import cli_main


def test_without_a_metric_a_sweep_scores_the_best_checkpoints_and_without_a_direction_takes_its_mode():
    resolved = fit_config(cli_main, ())
    assert scored_by(resolved, None, None) == ("val/loss", "minimize")
    told = fit_config(cli_main, ("--best_checkpoint.monitor=val/acc", "--best_checkpoint.mode=max"))
    assert scored_by(told, None, None) == ("val/acc", "maximize")
    assert scored_by(told, "val/acc", None) == ("val/acc", "maximize"), "the metric given is the one it monitors"
    assert scored_by(told, "val/loss", "minimize") == ("val/loss", "minimize"), "given: the checkpoint's are not asked"


def test_without_a_best_checkpoint_a_sweep_needs_its_metric_before_any_trial(capsys):
    error = refusal(
        capsys, lambda: sweep("--study=unwatched", "--args", json.dumps(["--best_checkpoint=null"]), cli=printed_once)
    )
    assert error == "error: the trials' best checkpoint monitors no metric (--best_checkpoint.monitor): give --metric"
    assert not Path("runs/sweeps").exists(), "nothing opened, nothing run"


def test_a_metric_other_than_the_best_checkpoints_needs_its_direction_before_any_trial(capsys):
    error = refusal(capsys, lambda: sweep("--study=guess", "--metric=val/acc", cli=printed_once))
    assert error == (
        "error: --metric val/acc: give --direction maximize or minimize; a direction is taken only for the metric the"
        " trials' best checkpoint monitors, and that is val/loss (min)"
    )
    assert not Path("runs/sweeps").exists(), "nothing opened, nothing run"


@pytest.mark.parametrize(
    "kept,asked,said",
    [
        (  # a study of an earlier version, which recorded no metric
            ("minimize", None), ["--metric=val/loss", "--direction=maximize"],
            "scores its metric (minimize), this command val/loss (maximize)",
        ),
        (("minimize", "val/acc"), [], "scores val/acc (minimize), this command val/loss (minimize)"),  # the default
    ],
    ids=["direction", "metric"],
)  # fmt: skip
def test_an_existing_study_asked_to_score_otherwise_is_refused_before_any_trial(capsys, kept, asked, said):
    direction, metric = kept
    study = optuna.create_study(storage=journal("kept"), study_name="kept", direction=direction)
    if metric:
        study.set_user_attr("metric", metric)
    error = refusal(capsys, lambda: sweep("--study=kept", *asked, cli=printed_once))
    where = Path("runs/sweeps/kept.journal").resolve()
    assert error == f"error: --study kept: the study in {where} {said}; start a new --study for that, or give the" \
        " study's --metric and --direction"  # fmt: skip
    assert open_study("kept").trials == [] and not Path("runs/sweeps/kept").exists(), "no trial ran"


def journal(name: str) -> optuna.storages.JournalStorage:
    Path("runs/sweeps").mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(f"runs/sweeps/{name}.journal"))


@pytest.mark.slow
def test_a_model_that_does_not_log_the_sweeps_metric_stops_the_worker_at_its_first_trial_and_leaves_nothing(capfd):
    # TinyClassifier logs val/loss and val/acc (what its recipe's monitors watch), no val/f1.
    command = ["--config", study_config(), *TINY, *NO_PRUNING, "--study=f1"]
    with pytest.raises(SystemExit) as exit_:
        sweep_tool.main(cli_main, [*command, "--n_trials=3", "--metric=val/f1", "--direction=maximize"])
    out, err = capfd.readouterr()  # the trial's process's too
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert exit_.value.code == 2 and "Traceback" not in err, err[-3000:]
    assert errors == [
        "error: the sweep scores val/f1, which TinyClassifier does not log in validation (it logs: val/acc,"
        " val/loss); give --metric <one of them> and its --direction"
    ]
    started = [line for line in out.splitlines() if line.startswith("Trial ")]
    assert len(started) == 1 and not list(Path("runs/sweeps").glob("f1/*")), "one trial, no run left"
    # The study held that refused trial alone: gone, so a command scoring another way may begin it anew.
    study = sweep_tool.main(cli_main, [*command, "--n_trials=1"])
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] and study.user_attrs["metric"] == "val/loss"
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
