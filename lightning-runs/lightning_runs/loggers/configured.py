"""What the configured logger needs before its run starts: its local store open, on the process that logs."""

from lightning_runs.checkpoints.class_paths import imported_class
from lightning_runs.distributed import launched_as_rank_zero
from lightning_runs.loggers import trackers
from lightning_runs.loggers.mlflow_store import creation_lock, local_database, open_client
from lightning_runs.loggers.trackers import MLFlowRunLogger


def open_before_run(config) -> None:
    """Before the run folder is claimed: the configured MLflow logger's local store opens (created if new), on the
    process that will log to it. fast_dev_run logs nothing; a server's address is contacted when the run logs."""
    logger = config.trainer.logger
    found = imported_class(getattr(logger, "class_path", None))  # imported by the parser already
    if not (isinstance(found, type) and issubclass(found, MLFlowRunLogger)) or config.trainer.fast_dev_run:
        return
    if not trackers._MLFLOW_AVAILABLE:  # no store to open: the logger refuses in one line, naming the extra
        return
    database = local_database(logger.init_args.get("save_dir") or "runs", logger.init_args.get("tracking_uri"))
    if database is not None and launched_as_rank_zero():
        with creation_lock(database):
            open_client(f"sqlite:///{database}", database)
