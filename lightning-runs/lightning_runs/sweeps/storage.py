"""A study that many sweep workers share through Optuna's storage: opening (or creating) it, what it is scored by, and
taking its trials until it holds enough finished ones. Optuna's own mechanisms do the bookkeeping: an RDB's heartbeat
tells a dead worker's trial from a running one (a journal file: its worker's process, workers.py), and its callback
queues such a trial again with its values.

Which storage, by Optuna's guidance: a journal file for the workers of one machine (the default), an RDB server
(PostgreSQL, MySQL) for workers on several. SQLite serves one worker; Optuna advises against it for several (no
SELECT ... FOR UPDATE, "database is locked" under load, file locks broken on NFS): a worker on SQLite says so."""

import time
from collections.abc import Callable
from contextlib import contextmanager

import optuna
import sqlalchemy.exc
from optuna.trial import TrialState

from lightning_runs.errors import UsageError, first_line
from lightning_runs.sweeps import turns, workers
from lightning_runs.sweeps.trial import open_storage

# A trial whose worker died (kill -9, a lost node) is retried with its values at most this often: a trial that kills
# its worker every time (the machine's memory) must not keep the study busy forever.
RETRIES = 2
# Optuna 4.9 renamed the heartbeat's callback and its argument; the older names serve Optuna 3.6 to 4.8.
RENAMED = hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback")
RETRY = optuna.storages.RetryHeartbeatStaleTrialCallback if RENAMED else optuna.storages.RetryFailedTrialCallback
CALLBACK = "heartbeat_stale_trial_callback" if RENAMED else "failed_trial_callback"
STUDY_METRIC = "metric"  # the study's user attribute naming the metric its trials are scored by
# What opening a file or database that holds no readable study raises: SQL errors; in a journal, JSON that does not
# decode (ValueError) or an operation Optuna does not know (its replay asserts).
UNREADABLE = (sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError, ValueError, AssertionError)
FORMS = "give postgresql://user:password@host/database, sqlite:///<file> or a journal file's path"


@contextmanager
def storage_errors(url: str, where: str):
    """Whatever opening the storage `where` raises, said as what it is in one line (exit 2): a driver to install, a
    URL that names none, a server or file that cannot be opened (the driver's line: unreachable, authentication, no
    such database), or a study that cannot be read. A journal path's OSError is errors.main's (the path and the fix)."""
    try:
        yield
    except ImportError as error:  # Optuna's, or SQLAlchemy's, over the driver's missing module
        module = getattr(error.__cause__, "name", None) or error.name
        postgres = "pip install 'lightning-runs[postgres]' (psycopg 3, which postgresql:// loads)"
        fix = postgres if module == "psycopg" else f"install the package that provides {module}"
        raise UsageError(f"{where}: its database driver is not installed (no module {module}): {fix}") from None
    except sqlalchemy.exc.ArgumentError as error:  # an unknown database or driver, or no URL at all
        raise UsageError(f"{where}: not a storage this sweep can open ({first_line(error)}); {FORMS}") from None
    except sqlalchemy.exc.OperationalError as error:
        raise UsageError(f"{where}: cannot open it: {first_line(error.orig or error)}") from None
    except UNREADABLE as error:
        reason = first_line(getattr(error, "orig", None) or error)
        raise UsageError(f"{where}: not a readable study ({reason}); move it away to start afresh") from None


def open_study(url: str, name: str, direction: str, turn: turns.Turn, interval: int, grace_period: int) -> optuna.Study:
    """The study, created by the first worker: in the worker's turn, as two workers creating it at once race on Optuna's
    schema ("UNIQUE constraint failed: alembic_version.version_num"). An RDB's heartbeat beats every `interval` seconds;
    a trial without one for `grace_period` is failed and queued again (a journal has none: workers.py)."""
    beat = {"heartbeat_interval": interval, "grace_period": grace_period, CALLBACK: retry()} if "://" in url else {}
    with turn:
        storage = open_storage(url, **beat)
        return optuna.create_study(storage=storage, study_name=name, direction=direction, load_if_exists=True)  # ty: ignore[invalid-argument-type]  # --direction takes only Optuna's two


def retry():
    """Queues a dead worker's trial again with its values, at most RETRIES times (both heartbeats call it)."""
    return RETRY(max_retry=RETRIES)


def keep_scoring(study: optuna.Study, metric: str, direction: str, where: str) -> None:
    """A study keeps the direction it was created with (Optuna cannot change it) and, in a user attribute, its metric:
    a command asking for others is refused before any trial, and one that finds no metric recorded records its own."""
    kept, recorded = study.direction.name.lower(), study.user_attrs.get(STUDY_METRIC)
    if kept != direction or recorded not in (None, metric):
        theirs = f"{recorded} ({kept})" if recorded else f"its metric ({kept})"
        raise UsageError(
            f"--study {study.study_name}: the study in {where} scores {theirs}, this command {metric} ({direction});"
            " start a new --study for that, or give the study's --metric and --direction"
        )
    study.set_user_attr(STUDY_METRIC, metric)  # the same as recorded, or the first record


def counts(study: optuna.Study) -> tuple[int, int]:
    """The study's finished and running trials, from one read: read apart, a trial that ends between the two reads
    is counted in neither."""
    states = [t.state for t in study.get_trials(deepcopy=False)]
    return sum(s in (TrialState.COMPLETE, TrialState.PRUNED) for s in states), states.count(TrialState.RUNNING)


def work(
    study: optuna.Study,
    objective: Callable,
    n_trials: int,
    turn: turns.Turn,
    wait: float,
    journal_grace: float | None,
    after_trial: Callable | None = None,
) -> None:
    """Take trials from the study until it holds `n_trials` finished ones, or this worker has tried as many as it
    lacked at the start.

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

    said_waiting, attempts = False, n_trials - counts(study)[0]
    while attempts > 0:
        with turn:
            optuna.storages.fail_stale_trials(study)  # a dead worker's trial: FAIL, and queued again with its values
            if journal_grace is not None:  # a journal's stand-in for the heartbeat
                workers.fail_trials_of_dead_workers(study, journal_grace, retry())
            done, running = counts(study)
            if done >= n_trials:
                return
            if done + running >= n_trials:
                turn.give()
                if not said_waiting:
                    print(
                        f"Waiting: the {running} running trial(s) of other workers would finish the study", flush=True
                    )
                    said_waiting = True
                time.sleep(wait)
                continue
            said_waiting = False
            study.optimize(started, n_trials=1, catch=(Exception,), callbacks=[after_trial] if after_trial else None)
        attempts -= 1


def discard_if_only(study: optuna.Study, mine: list[int], url: str) -> None:
    """Delete the study where every trial it holds is one of `mine` (this worker's) and none finished: a sweep refused
    for its metric leaves nothing, and the corrected command begins the study anew, with its own direction."""
    trials = study.get_trials(deepcopy=False)
    if all(t.number in mine and t.state == TrialState.FAIL for t in trials):
        optuna.delete_study(study_name=study.study_name, storage=open_storage(url))
