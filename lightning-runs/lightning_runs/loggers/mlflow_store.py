"""The MLflow store beside the runs, `<save_dir>/mlflow.db`: created and migrated by one process at a time, and
opened as the logger is built, before the run folder holds a file, so that a store nobody can open is one line with no
run folder left.

MLflow creates its tables and runs its schema migrations when a client first opens an SQLite file. Two fits started
together on a fresh runs/ both migrated it: the second failed half way ("duplicate column name: step") with a
SQLAlchemy traceback. A store another process holds locked was the same traceback, after the run folder existed.
"""

import contextlib
import fcntl
from collections.abc import Generator
from pathlib import Path

from lightning_runs.errors import Failed, first_line

DATABASE = "mlflow.db"
# The experiment every MLflow store is created with (mlflow.tracking.default_experiment.DEFAULT_EXPERIMENT_ID).
DEFAULT_EXPERIMENT_ID = "0"


@contextlib.contextmanager
def creation_lock(database: Path | None) -> Generator[None, None, None]:
    """Held while a client opens the store: the first one creates and migrates it, the others then find it whole.
    flock is released by the kernel when its holder dies, so a killed fit never leaves it held."""
    if database is None:
        yield
        return
    database.parent.mkdir(parents=True, exist_ok=True)
    with open(database.with_name(database.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def open_client(tracking_uri: str, database: Path | None):
    """An MlflowClient on a store that answers; called under `creation_lock` (a first one creates and migrates it)."""
    from mlflow.tracking import MlflowClient

    try:
        client = MlflowClient(tracking_uri)
        client.search_experiments(max_results=1)  # a read: the store answers, and no other process holds it locked
    except Exception as error:  # SQLAlchemy's OperationalError, MLflow's MlflowException: one line either way
        reason = first_line(error)
        raise Failed(
            f"the MLflow store {database or tracking_uri} cannot be opened ({reason}); if another process holds it"
            " (a tool writing to it), wait for it or close it, and run again"
        ) from None
    return client


def retire_empty_default(client) -> None:
    """MLflow creates an experiment "Default" (id 0) with every new store, for runs started without one; runs here
    always have their own, so an empty Default is only clutter in `mlflow ui`. It is deleted (MLflow's trash:
    `mlflow experiments restore --experiment-id 0` brings it back) while it holds no run, never once it has one."""
    default = client.get_experiment(DEFAULT_EXPERIMENT_ID)
    if default.lifecycle_stage == "active" and not client.search_runs([DEFAULT_EXPERIMENT_ID], max_results=1):
        client.delete_experiment(DEFAULT_EXPERIMENT_ID)
