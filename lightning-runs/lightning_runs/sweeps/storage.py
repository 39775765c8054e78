"""A study that many sweep workers share through Optuna's storage: opening (or creating) it, and taking its trials
until it holds enough finished ones. Optuna's own mechanisms do the bookkeeping: an RDB's heartbeat tells a dead
worker's trial from a running one (a journal file: its worker's process, workers.py), RetryHeartbeatStaleTrialCallback
queues such a trial again with its values.

Which storage, by Optuna's guidance: a journal file for the workers of one machine (the default), an RDB server
(PostgreSQL, MySQL) for workers on several. SQLite serves one worker; Optuna advises against it for several (it has
no SELECT ... FOR UPDATE to claim a queued trial with, fails with "database is locked" under load, and its file
locks break on NFS): a worker on SQLite says so."""

import fcntl
import os
import sys
import time
import warnings
from collections.abc import Callable

import optuna
import sqlalchemy.exc
from optuna.trial import TrialState

from lightning_runs.errors import UsageError, first_line
from lightning_runs.sweeps import turns, workers
from lightning_runs.sweeps.trial import open_storage

# A trial whose worker died (kill -9, a lost node) is retried with its values at most this often: a trial that kills
# its worker every time (the machine's memory) must not keep the study busy forever.
RETRIES = 2
# Two workers creating one study at the same moment race on Optuna's schema ("UNIQUE constraint failed:
# alembic_version.version_num"): the later one tries again this often, a second apart.
OPEN_ATTEMPTS = 5
# What opening a file that is no study raises: SQLite's errors; in a journal, JSON that does not decode (ValueError)
# or an operation Optuna does not know (its replay asserts).
UNREADABLE = (sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError, ValueError, AssertionError)


def finished(study: optuna.Study) -> int:
    return counts(study)[0]


def counts(study: optuna.Study) -> tuple[int, int]:
    """The study's finished and running trials, from one read: read apart, a trial that ends between the two reads
    is counted in neither."""
    states = [t.state for t in study.get_trials(deepcopy=False)]
    return sum(s in (TrialState.COMPLETE, TrialState.PRUNED) for s in states), states.count(TrialState.RUNNING)


def work(
    study: optuna.Study,
    objective: Callable,
    n_trials: int,
    attempts: int,
    wait: float,
    journal_grace: float | None,
    turn: turns.Turn,
    after_trial: Callable | None = None,
) -> None:
    """Take trials from the study until it holds `n_trials` finished ones, or this worker has tried `attempts`.

    A worker counts the study's trials and starts one only in its turn (turns.py), and gives the turn back once its
    trial is running: a trial starts only while the finished and running ones (of every worker) fall short of
    `n_trials`, so the workers together never overshoot. (Optuna's MaxTrialsCallback stops a worker once a trial
    ends, too late to keep others from starting one.) While other workers' running trials would complete the study,
    this one waits: one of them may fail, or its worker die, and this worker then runs what is missing.
    `journal_grace`: on a journal file, how long a trial may run unmarked by its worker (workers.py); None on an RDB.
    `after_trial(study, trial)`: called once each trial is stored (Optuna's callbacks); what it raises ends the work.
    """

    def started(trial: optuna.Trial):  # Optuna has stored the trial as running: the others may count it now
        turn.give()
        return objective(trial)

    said_waiting = False
    while attempts > 0:
        turn.take()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                # A dead worker's trial: FAIL, and queued again with its values.
                optuna.storages.fail_stale_trials(study)
            if journal_grace is not None:  # a journal's stand-in for the heartbeat
                workers.fail_trials_of_dead_workers(study, journal_grace, _retry())
            done, running = counts(study)
            if done >= n_trials:
                return
            if done + running >= n_trials:
                turn.give()
                if not said_waiting:
                    waiting = f"Waiting: the {running} running trial(s) of other workers would finish the study"
                    print(waiting, flush=True)
                    said_waiting = True
                time.sleep(wait)
                continue
            said_waiting = False
            study.optimize(started, n_trials=1, catch=(Exception,), callbacks=[after_trial] if after_trial else None)
        finally:
            turn.give()
        attempts -= 1


def discard_if_only(study: optuna.Study, mine: list[int], url: str) -> None:
    """Delete the study where every trial it holds is one of `mine` (this worker's) and none finished: a sweep refused
    for its metric leaves nothing, and the corrected command begins the study anew, with its own direction."""
    trials = study.get_trials(deepcopy=False)
    if all(t.number in mine and t.state == TrialState.FAIL for t in trials):
        optuna.delete_study(study_name=study.study_name, storage=open_storage(url))


def open_study(url, name, direction, pruner, save_dir, heartbeat_interval, grace_period, where) -> optuna.Study:
    """The study, created by the first worker (`where` names its storage in messages). Workers on one machine take
    turns through a lock on `save_dir` (the folder itself: no lock file left behind); on several machines, again."""
    if url.startswith("sqlite"):
        print(
            f"Note: {where} is SQLite, which Optuna advises against for several workers at once; a new study keeps"
            " a journal file for the workers of one machine, --storage postgresql://... serves many",
            file=sys.stderr,
            flush=True,
        )
    folder = os.open(save_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        for attempt in range(OPEN_ATTEMPTS):
            try:
                with warnings.catch_warnings():  # Optuna calls the heartbeat experimental: nothing a user can act on
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    heartbeat = _heartbeat(heartbeat_interval, grace_period) if "://" in url else {}
                    storage = open_storage(url, **heartbeat)
                return optuna.create_study(
                    storage=storage, study_name=name, direction=direction, pruner=pruner, load_if_exists=True
                )
            except sqlalchemy.exc.IntegrityError:
                if attempt + 1 == OPEN_ATTEMPTS:
                    raise
                time.sleep(1)
            except UNREADABLE as error:
                reason = first_line(getattr(error, "orig", None) or error)
                kind = "database" if "://" in url else "journal"
                raise UsageError(
                    f"{where}: not a readable study {kind} ({reason}); move it away to start afresh"
                ) from None
    finally:
        os.close(folder)  # and with it the lock


def _heartbeat(interval: int, grace_period: int) -> dict:
    """RDBStorage's heartbeat and what it does with a stale trial: fail it, then queue its values again."""
    beat = {"heartbeat_interval": interval, "grace_period": grace_period}
    if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):  # Optuna 4.9 renamed both
        return {**beat, "heartbeat_stale_trial_callback": _retry()}
    return {**beat, "failed_trial_callback": _retry()}


def _retry():
    """Queues a dead worker's trial again with its values, at most RETRIES times (both heartbeats call it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        retry = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None)
        return (retry or optuna.storages.RetryFailedTrialCallback)(max_retry=RETRIES)
