"""On a journal file, which has no heartbeat, a worker tells a dead worker's trial by that worker's process
(sweeps/workers.py): gone, the trial is failed and its values queued once; alive, or on another machine, it is left."""

import subprocess

import optuna
import pytest
from optuna.trial import TrialState
from test_turns import journal

from lightning_runs import processes
from lightning_runs.sweeps import workers
from lightning_runs.sweeps.storage import retry

GRACE = 30
pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")  # the retry callback's


def running_trial(**worker) -> optuna.Study:
    """A study whose one trial is RUNNING, marked by `worker` (this process unless told otherwise)."""
    study = optuna.create_study(storage=journal(), study_name="s", load_if_exists=True)
    trial = study.ask()
    trial.suggest_float("x", 0, 1)
    workers.mark(trial)
    if worker:
        trial.set_user_attr(workers.KEY, {**trial.study.trials[0].user_attrs[workers.KEY], **worker})
    return study


@pytest.fixture
def dead() -> dict:
    """The pid and start of a process that has ended (reaped)."""
    process = subprocess.Popen(["sleep", "30"])
    started = processes.started(process.pid)
    process.kill()
    process.wait()
    return {"pid": process.pid, "started": started}


def judged(study_name: str = "s") -> tuple[list[int], optuna.Study]:
    other = optuna.load_study(study_name=study_name, storage=journal())
    return workers.fail_trials_of_dead_workers(other, GRACE, retry()), other


def test_a_running_workers_trial_is_left_alone():
    running_trial()
    failed, study = judged()
    assert failed == [] and [t.state for t in study.trials] == [TrialState.RUNNING]


def test_a_dead_workers_trial_is_failed_and_its_values_queued_once(dead):
    params = running_trial(**dead).trials[0].params
    failed, study = judged()
    assert failed == [0]
    assert [t.state for t in study.trials] == [TrialState.FAIL, TrialState.WAITING]
    assert study.trials[1].params == params
    assert optuna.storages.RetryHeartbeatStaleTrialCallback.retried_trial_number(study.trials[1]) == 0
    assert judged()[0] == [], "judged once"


def test_two_workers_judging_the_same_dead_trial_queue_it_once(dead):
    running_trial(**dead)
    first, second = (optuna.load_study(study_name="s", storage=journal()) for _ in range(2))
    failed = [workers.fail_trials_of_dead_workers(study, GRACE, retry()) for study in (first, second)]
    assert failed == [[0], []]
    assert [t.state for t in first.trials] == [TrialState.FAIL, TrialState.WAITING]


def test_a_pid_the_system_gave_to_another_process_is_not_taken_for_the_worker():
    running_trial(started=-1)  # this process's pid, but a start that is not this process's
    assert judged()[0] == [0]


def test_another_machines_worker_is_not_judged(dead):
    running_trial(**dead, host="elsewhere")
    assert judged()[0] == []


def test_a_trial_its_worker_never_marked_waits_out_the_grace_period():
    study = optuna.create_study(storage=journal(), study_name="s")
    study.ask()  # its worker died before marking it
    assert judged()[0] == []
    other = optuna.load_study(study_name="s", storage=journal())
    assert workers.fail_trials_of_dead_workers(other, 0, retry()) == [0]
