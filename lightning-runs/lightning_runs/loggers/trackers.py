"""MLFlowRunLogger and WandbRunLogger: a tracking service's run kept beside the run folder and continued on resume."""

import os
import secrets
from pathlib import Path

from lightning.fabric.utilities.logger import _flatten_dict
from lightning.pytorch.loggers import MLFlowLogger, WandbLogger
from lightning.pytorch.loggers.logger import rank_zero_experiment
from lightning.pytorch.loggers.mlflow import _MLFLOW_AVAILABLE
from lightning.pytorch.loggers.wandb import _WANDB_AVAILABLE
from lightning.pytorch.utilities import rank_zero_only, rank_zero_warn

from lightning_runs.console import is_quiet
from lightning_runs.errors import UsageError
from lightning_runs.loggers.mlflow_store import DATABASE, creation_lock, open_client, retire_empty_default
from lightning_runs.loggers.run_folder import INSTALL, FolderLogger, parameters
from lightning_runs.run_folders import RUNS


class MLFlowRunLogger(FolderLogger, MLFlowLogger):
    """MLflow in an SQLite file beside the runs, no server: `<save_dir>/mlflow.db`, artifacts (pictures, the config) in
    `<save_dir>/mlflow-artifacts/<name>/`. The MLflow experiment is `name`, its run `version_N`, with the run folder
    as tag `run_folder`. `tracking_uri` (a server's address) sends everything there instead.
    """

    ID_FILE = "mlflow_run_id.txt"

    def __init__(
        self,
        save_dir: str = RUNS,
        name: str | None = None,
        version: int | str | None = None,
        tracking_uri: str | None = None,
        tags: dict[str, str] | None = None,
    ) -> None:
        # MLflow 3 reports usage to its servers unless told not to; this project sends nothing anywhere by default.
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        if is_quiet():  # read as mlflow is first imported (the check below imports it): its database set-up lines
            os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
        if not _MLFLOW_AVAILABLE:
            raise UsageError(f"the MLflow logger needs mlflow: {INSTALL}")
        self._take_folder(save_dir, name, version)
        # The SQLite file beside the runs, or None for a tracking server (it serializes its own writes).
        self._database = None if tracking_uri else Path(save_dir).resolve() / DATABASE
        artifacts = None if tracking_uri else str(Path(save_dir).resolve() / "mlflow-artifacts" / self.name)
        run_id = self._stored_id()
        self._resumed = run_id is not None
        # MlflowClient opens its store as it is built, creating the database on a first run, and MLFlowLogger builds
        # one at once: on every rank, and under fast_dev_run too. It gets an address it never contacts instead; the
        # real client is built on first use, which is on rank zero only (the logging methods are rank-zero-only).
        super().__init__(
            experiment_name=self.name,
            run_name=self._folder.name,
            tracking_uri="http://never-contacted.invalid",
            tags={"run_folder": str(self._folder), **(tags or {})},
            artifact_location=artifacts,
            run_id=run_id,
        )
        self._tracking_uri = tracking_uri or f"sqlite:///{self._database}"
        if rank_zero_only.rank == 0:  # ty: ignore[missing-attribute]  # a store that cannot be opened is one line before the run folder holds a file (Lightning sets rank on the function at import)
            with creation_lock(self._database):
                open_client(self._tracking_uri, self._database)

    @property
    @rank_zero_experiment
    def experiment(self):
        opened = self._initialized
        if not opened:
            with creation_lock(self._database):  # two fits on a fresh store: one creates it, and the experiment
                self._open_store()
        client = super().experiment
        if not opened:  # the MLflow run was just created, or found again: record it, or mark it running again
            if self._resumed:
                client.update_run(self._run_id, status="RUNNING")
            else:
                self._store_id(self._run_id)  # ty: ignore[invalid-argument-type]  # set by super().experiment
        return client

    def _open_store(self) -> None:
        from mlflow.exceptions import MlflowException

        client = self._mlflow_client = open_client(self._tracking_uri, self._database)
        if self._run_id is not None:
            try:
                client.get_run(self._run_id)
                return
            except MlflowException:  # a run folder copied without its store, or a store deleted: training goes on
                rank_zero_warn(f"{self._folder}: MLflow run {self._run_id} is not in {self._tracking_uri}: a new one")
                self._run_id, self._resumed = None, False
        if client.get_experiment_by_name(self._experiment_name) is None:  # else MLFlowLogger warns that it is missing
            client.create_experiment(self._experiment_name, artifact_location=self._artifact_location)
            if self._database is not None:  # a server's experiments are its users', not this run's to tidy
                retire_empty_default(client)

    @rank_zero_only
    def log_hyperparams(self, params) -> None:
        # MLflow refuses to change a logged parameter: a resumed run, or an evaluation of its checkpoint with another
        # batch size, adds only the parameters it does not have yet (a resumed fit keeps its settings).
        logged = self.experiment.get_run(self.run_id).data.params
        super().log_hyperparams({k: v for k, v in _flatten_dict(parameters(params)).items() if k not in logged})


class WandbRunLogger(FolderLogger, WandbLogger):
    """W&B offline by default: the W&B run is written to `<run folder>/wandb/offline-run-*` and nothing leaves the
    machine; `wandb sync <that folder>` uploads it later. `offline: false` logs online (after `wandb login`). The W&B
    project is `project`, else `name`; the W&B run is named `version_N`.
    """

    ID_FILE = "wandb_run_id.txt"

    def __init__(
        self,
        save_dir: str = RUNS,
        name: str | None = None,
        version: int | str | None = None,
        offline: bool = True,
        project: str | None = None,
        entity: str | None = None,
        tags: list[str] | None = None,
    ) -> None:
        if not _WANDB_AVAILABLE:
            raise UsageError(f"the W&B logger needs wandb: {INSTALL}")
        self._take_folder(save_dir, name, version)
        if offline:
            os.environ.setdefault("WANDB_ERROR_REPORTING", "false")  # crash reports would go to W&B's servers
        # `mode` rather than WandbLogger's `offline`, which sets WANDB_MODE=dryrun for the rest of the process.
        settings: dict = {"mode": "offline"} if offline else {}
        if is_quiet():  # wandb.init reads a dict as its Settings
            settings["settings"] = {"quiet": True}  # no run history and summary tables at the end
        super().__init__(
            name=self._folder.name,
            # Absolute: W&B's service process, which a process started by another that uses W&B shares, has its
            # own working directory.
            save_dir=str(self._folder.resolve()),
            # The folder's W&B run, or a new id chosen here rather than by W&B: known before the run opens, it is
            # the same run again when finalize() has closed it and something logs again (a fit's --test_best).
            id=self._stored_id() or secrets.token_hex(6),
            resume="allow",  # the run of that id continues, or is created
            project=project or self.name,
            entity=entity,
            tags=tags,
            **settings,
        )
        del self._wandb_init["anonymous"]  # always None here; W&B warns that the setting is going away

    @property
    @rank_zero_experiment
    def experiment(self):
        opened = self._experiment is not None
        run = super().experiment
        if not opened and self._stored_id() is None:  # a new run: keep its id for the next command
            self._store_id(run.id)
        return run

    @rank_zero_only
    def finalize(self, status: str) -> None:
        super().finalize(status)
        # WandbLogger leaves the W&B run open: the next logger in this process (a sweep's next trial) would join it.
        if self._experiment is not None:
            self._experiment.finish(exit_code=0 if status == "success" else 1)
            self._experiment = None
