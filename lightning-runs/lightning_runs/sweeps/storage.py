"""A study that many sweep workers share through Optuna's storage: opening (or creating) it, and taking its trials
until it holds enough finished ones. Optuna's own mechanisms do the bookkeeping: the storage's heartbeat tells a
dead worker's trial from a running one, RetryFailedTrialCallback queues such a trial again with its values."""

import fcntl
import os
import time
import warnings
from collections.abc import Callable

import optuna
import sqlalchemy.exc
from optuna.trial import TrialState

from lightning_runs.errors import UsageError, first_line
from lightning_runs.sweeps.trial import open_storage

# A trial whose worker died (kill -9, a lost node) is retried with its values at most this often: a trial that kills
# its worker every time (the machine's memory) must not keep the study busy forever.
RETRIES = 2
# Two workers creating one study at the same moment race on Optuna's schema ("UNIQUE constraint failed:
# alembic_version.version_num"): the later one tries again this often, a second apart.
OPEN_ATTEMPTS = 5


def finished(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))


def work(study: optuna.Study, objective: Callable, n_trials: int, attempts: int, wait: float) -> None:
    """Take trials from the study until it holds `n_trials` finished ones, or this worker has tried `attempts`.

    A trial starts only while the finished and running ones (of every worker) fall short of `n_trials`: the workers
    together overshoot only by trials started at the same instant. (Optuna's MaxTrialsCallback stops a worker once a
    trial ends, too late to keep others from starting one.) While other workers' running trials would complete the
    study, this one waits: one of them may fail, or its worker die, and this worker then runs what is missing.
    """
    said_waiting = False
    while attempts > 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)  # a dead worker's trial: FAIL, and queued again with its values
        done = finished(study)
        running = len(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))
        if done >= n_trials:
            return
        if done + running >= n_trials:
            if not said_waiting:
                print(f"Waiting: the {running} running trial(s) of other workers would finish the study", flush=True)
                said_waiting = True
            time.sleep(wait)
            continue
        said_waiting = False
        study.optimize(objective, n_trials=1, catch=(Exception,))
        attempts -= 1


def open_study(url, name, direction, pruner, save_dir, heartbeat_interval, grace_period, where) -> optuna.Study:
    """The study, created by the first worker (`where` names its storage in messages). Workers on one machine take
    turns through a lock on `save_dir` (the folder itself: no lock file left behind); on several machines, again."""
    folder = os.open(save_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        for attempt in range(OPEN_ATTEMPTS):
            try:
                with warnings.catch_warnings():  # Optuna calls the heartbeat experimental: nothing a user can act on
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    storage = open_storage(url, **_heartbeat(heartbeat_interval, grace_period))
                return optuna.create_study(
                    storage=storage, study_name=name, direction=direction, pruner=pruner, load_if_exists=True
                )
            except sqlalchemy.exc.IntegrityError:
                if attempt + 1 == OPEN_ATTEMPTS:
                    raise
                time.sleep(1)
            except (sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError) as error:
                reason = first_line(error.orig if getattr(error, "orig", None) else error)
                raise UsageError(
                    f"{where}: not a readable study database ({reason}); move it away to start afresh"
                ) from None
    finally:
        os.close(folder)  # and with it the lock


def _heartbeat(interval: int, grace_period: int) -> dict:
    """RDBStorage's heartbeat and what it does with a stale trial: fail it, then queue its values again."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):  # Optuna 4.9 renamed both
            retry = optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=RETRIES)
            return {
                "heartbeat_interval": interval,
                "grace_period": grace_period,
                "heartbeat_stale_trial_callback": retry,
            }
        retry = optuna.storages.RetryFailedTrialCallback(max_retry=RETRIES)
        return {"heartbeat_interval": interval, "grace_period": grace_period, "failed_trial_callback": retry}
