"""Which worker runs a trial, and whether that worker still lives: what a journal file has instead of RDBStorage's
heartbeat (Optuna's JournalStorage implements none, and its `fail_stale_trials` does nothing on it).

Each worker marks the trial it starts (user attr "worker": its process as lightning_runs.processes records it). Another
worker on the same machine finds the trial RUNNING while its worker's process is gone: it fails the trial and queues
its values again, as the heartbeat's callback does on an RDB. A trial whose worker died before it could mark it is
judged the same way once `grace_period` seconds have passed since it started. Trials of workers on other machines are
never judged: a journal file is for one machine; an RDB's heartbeat serves several."""

import datetime

import optuna
from optuna.trial import TrialState

from lightning_runs.processes import is_dead, this_process

KEY = "worker"


def mark(trial: optuna.Trial) -> None:
    """Record this worker as the one running `trial` (its number too: a retried trial inherits the user attrs)."""
    trial.set_user_attr(KEY, {"trial": trial.number, **this_process()})


def fail_trials_of_dead_workers(study: optuna.Study, grace_period: float, retry) -> list[int]:
    """Fail each RUNNING trial whose worker on this machine is gone, then `retry(study, trial)`: the numbers failed.
    Two workers may judge the same trial at once: the journal applies the first FAIL, the other's tell is refused."""
    now, failed = datetime.datetime.now(), []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = trial.user_attrs.get(KEY)
        if isinstance(worker, dict) and worker.get("trial") == trial.number:
            if not is_dead(worker):
                continue
        elif trial.datetime_start and (now - trial.datetime_start).total_seconds() < grace_period:
            continue  # just started: its worker marks it in a moment
        try:
            study.tell(trial.number, state=TrialState.FAIL)
        except (optuna.exceptions.UpdateFinishedTrialError, ValueError):  # another worker failed it first
            continue
        failed.append(trial.number)
        retry(study, study.get_trials(deepcopy=False)[trial.number])
    return failed
