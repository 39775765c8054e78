"""What a sweep scores its trials by (sweeps/scoring.py): the metric and direction given, or the trials' best
checkpoint's; never a direction guessed for another metric, never a study scored one way and then another, and a
model that does not log what the sweep scores stops the worker after its first trial's sanity check, not every trial
trained to its end. (Each trial's own check: test_trial.py.)"""

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
from tiny_runs import refusal

from lightning_runs.sweeps.scoring import scoring
from lightning_runs.tools import sweep as sweep_tool
from tiny_tasks import cli_main


def test_without_a_metric_a_sweep_scores_the_best_checkpoints_and_without_a_direction_takes_its_mode():
    resolved = sweep_tool._resolved(cli_main, (), ())
    assert (scoring(resolved, None, None).metric, scoring(resolved, None, None).direction) == ("val/loss", "minimize")
    told = sweep_tool._resolved(cli_main, (), ("--best_checkpoint.monitor=val/acc", "--best_checkpoint.mode=max"))
    assert scoring(told, "val/acc", None).direction == "maximize", "the metric given is the one it monitors"
    assert scoring(told, None, None).checkpoint == ("val/acc", "max"), "what each fit confirms it watches"
    assert scoring(told, "val/loss", "minimize").checkpoint is None, "given: the checkpoint may watch what it likes"


def test_a_metric_other_than_the_best_checkpoints_needs_its_direction_before_any_trial(capsys):
    error = refusal(capsys, lambda: sweep("--study=guess", "--metric=val/acc"))
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
    error = refusal(capsys, lambda: sweep("--study=kept", *asked))
    where = Path("runs/sweeps/kept.journal").resolve()
    assert error == f"error: --study kept: the study in {where} {said}; start a new --study for that, or give the" \
        " study's --metric and --direction"  # fmt: skip
    assert open_study("kept").trials == [] and not Path("runs/sweeps/kept").exists(), "no trial ran"


def journal(name: str) -> optuna.storages.JournalStorage:
    Path("runs/sweeps").mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(f"runs/sweeps/{name}.journal"))


@pytest.mark.slow
def test_a_model_that_does_not_log_the_sweeps_metric_stops_the_worker_at_its_first_trial_and_leaves_nothing(capfd):
    # UnderscoreNames logs val_loss: the recipe's default monitor, val/loss, is followed there in each fit.
    model = [*json.loads(TINY[1]), "--model=tiny_tasks.UnderscoreNames"]
    command = ["--config", study_config(), *TINY[2:], "--args", json.dumps(model), *NO_PRUNING, "--study=underscores"]
    with pytest.raises(SystemExit) as exit_:
        sweep_tool.main(cli_main, [*command, "--n_trials=3"])
    err = capfd.readouterr().err  # the trial's process's too
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert exit_.value.code == 2 and "Traceback" not in err, err[-3000:]
    assert errors == [
        "error: the sweep scores val/loss (min), which tiny_tasks.UnderscoreNames does not log (its validation"
        " metrics: val_acc, val_loss): give --metric val_loss --direction minimize"
    ]
    assert err.count("Trial ") <= 1 and not list(Path("runs/sweeps").glob("underscores/*")), "one trial, no run left"
    # The study held that refused trial alone: gone, so the command the line asks for starts it anew.
    study = sweep_tool.main(cli_main, [*command, "--n_trials=1", "--metric=val_loss", "--direction=minimize"])
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] and study.user_attrs["metric"] == "val_loss"
