"""<run>/summary.json: what a run was, how it ended and what it scored; the config and the scores for its loggers
(in TensorBoard, its HPARAMS entry).

The scores follow the metric the best checkpoint monitors (contract/parts.py): `hp/best_val_f1` for `val/f1`, and its
test counterpart `hp/test_f1`.

Every evaluation records the data it ran on, as a config names it (the DataModule's class path, and its
hyperparameters as init args); the fit records its own the same way, under `data` (an older summary: its config's).
A `test` on the data the run was fitted on updates the summary's `metrics`: the same class path, and equal values
for every argument both give, apart from `batch_size` (Lightning's name for it), which changes no sample. A test on
other data (`--data.<argument>` or `--data <class>` given to `test --ckpt_path`) keeps its metrics under
`results[<data label>]` (naming.py), one entry per dataset, so that another dataset's score never passes for the
run's own. Where either side is unknown (no saved config, no DataModule), the test counts as the run's own.
"""

import json
import time
from pathlib import Path

import yaml
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_warn
from lightning.pytorch.utilities.data import extract_batch_size

from lightning_runs.console import owner_package
from lightning_runs.contract import parts as contract
from lightning_runs.contract.names import counterpart, stage_of
from lightning_runs.errors import NO_SPACE, DiskFull, Stopped, Terminated
from lightning_runs.faults.signals import ran_to_its_end
from lightning_runs.folders.files import remove_emptied_logger_files
from lightning_runs.folders.layout import free_path, run_folder, write_json
from lightning_runs.folders.naming import data_label
from lightning_runs.folders.recipes import recipe_hash
from lightning_runs.pictures.writers import picture_writers
from lightning_runs.processes import this_process
from lightning_runs.records import provenance
from lightning_runs.records.entries import (
    best_tag,
    checkpoint_entries,
    data_entry,
    hparams_tag,
    iso_time,
    metric_entries,
    relative_path,
    same_data,
)
from lightning_runs.records.parameters import log_parameters


class RunSummary(Callback):
    """Writes `summary.json` into the run directory (rank zero only, atomically): `running` when fit starts and
    after every epoch, then `completed`, `failed` (with the exception) or `interrupted` (Ctrl+C, SIGTERM).
    `test` and `validate` on a checkpoint of the run add their metrics to it under `evaluations`. The fit's `process`
    (lightning_runs.processes) tells a run still at work from one killed with -9, which says nothing more.
    """

    def __init__(self, filename: str = "summary.json") -> None:
        self.filename = filename
        self._started = None
        self._epochs = self._samples = 0
        self._facts = self._config_text = None
        self._recipe, self._earlier = {}, []
        self._loaded = {}  # epoch and global_step of the checkpoint loaded, if any
        self.fit_record: dict | None = None  # how the fit ended, also without a run folder: fit's closing block

    def setup(self, trainer, pl_module, stage: str) -> None:
        if trainer.is_global_zero and not trainer.fast_dev_run and stage != "predict":
            package = owner_package() or type(pl_module).__module__.partition(".")[0]  # no CLI: the model's own
            self._facts = {
                "git": provenance.git_state(*provenance.code_folders(package)),
                "versions": provenance.versions(),
                "device": provenance.device(trainer),
            }

    def on_load_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        # `test` and `validate` restore weights only: trainer.global_step stays 0 there.
        self._loaded = {"epoch": checkpoint.get("epoch"), "global_step": checkpoint.get("global_step")}

    def on_fit_start(self, trainer, pl_module) -> None:
        self._started, self._samples = time.time(), 0
        self._config_text = provenance.saved_config(trainer)
        # Parsed, hashed and read once: rewritten after every epoch, the summary must cost next to nothing.
        config = None if self._config_text is None else yaml.safe_load(self._config_text)
        self._recipe = {"config": config, "config_hash": recipe_hash(config), **(self._facts or {})}
        self._recipe["data"] = data_entry(trainer.datamodule)  # read as an evaluation reads its data, to compare
        self._recipe["seeds"] = provenance.seeds(config)
        self._recipe["process"] = this_process()  # the fit's, which `runs` tells killed when it is gone
        self._earlier = (self._read(trainer) or {}).get("evaluations", [])  # a resumed run keeps its tests
        self._write(trainer, self._fit_record(trainer, "running"))
        config_path = provenance.saved_config_path(trainer)
        if config_path is not None:
            for writer in picture_writers(trainer):  # TensorBoard's Text tab, an MLflow artifact
                writer.config(config_path)
        monitor = contract.monitored(trainer)
        scores = [best_tag(monitor), hparams_tag(counterpart(monitor, "test"))]
        log_parameters(trainer, pl_module, [tag for tag in scores if tag])  # with the trainer's settings

    def on_train_start(self, trainer, pl_module) -> None:
        self._epochs = trainer.current_epoch  # after a resumed checkpoint has been restored

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._samples += extract_batch_size(batch) * trainer.world_size

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._epochs = trainer.current_epoch + 1
        self._write(trainer, self._fit_record(trainer, "running"))

    def on_fit_end(self, trainer, pl_module) -> None:
        # A SIGTERM handler may stop training cleanly instead of raising: still not a completed run.
        error = {"type": "SIGTERM", "message": "stopped early on SIGTERM"} if trainer.received_sigterm else None
        self.fit_record = self._fit_record(trainer, "interrupted" if error else "completed", error)
        self._write(trainer, self.fit_record)
        self._log_best(trainer)

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.state.fn == "validate":
            self._evaluated(trainer, "completed")

    def on_test_end(self, trainer, pl_module) -> None:
        self._evaluated(trainer, "completed")
        test = counterpart(contract.monitored(trainer), "test")
        if test in trainer.callback_metrics:
            _log_scores(trainer, {hparams_tag(test): trainer.callback_metrics[test]})

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        # Stopped: SIGTERM or Ctrl-C after a checkpoint (faults/); Terminated: SIGTERM outside training; Ctrl-C.
        stop = isinstance(exception, KeyboardInterrupt | SystemExit | Stopped | Terminated)
        status = "interrupted" if stop else "failed"
        message = str(exception) or {KeyboardInterrupt: "Ctrl+C", Terminated: "SIGTERM"}.get(type(exception), "")
        error = {"type": type(exception).__name__, "message": message}
        if stop and trainer.state.fn == "fit" and ran_to_its_end(trainer):  # the stop came after the last step
            status, error = "completed", None
        folder = run_folder(trainer)
        full = isinstance(exception, DiskFull) or (isinstance(exception, OSError) and exception.errno in NO_SPACE)
        if full and getattr(exception, "filename", "") is None and folder is not None:
            exception.filename = str(folder)  # a logger's writer names no file: the error then names the run's folder
        try:
            if trainer.state.fn == "fit":
                self._write(trainer, self._fit_record(trainer, status, error))
                self._log_best(trainer)  # before Lightning closes the writer, which it does next
            elif trainer.state.fn in ("validate", "test"):
                self._evaluated(trainer, status, error)
        except Exception as failure:  # raising here would skip Lightning's closing of the event files
            if not full:  # a full disk is said next, in the command's one line
                rank_zero_warn(f"could not record the {status} run in {self.filename}: {failure!r}")
        if full and trainer.is_global_zero and folder is not None and folder.is_dir():
            remove_emptied_logger_files(folder)

    def _fit_record(self, trainer, status: str, error: dict | None = None) -> dict:
        now = time.time()
        wall = None if self._started is None else now - self._started
        return {
            "status": status,
            "error": error,
            "started": iso_time(self._started),
            "updated": iso_time(now),
            "wall_time_s": wall,
            **self._recipe,
            "epochs": self._epochs,
            "global_step": trainer.global_step,
            # Training samples over the fit's wall time, validation and checkpointing included.
            "samples_per_sec": self._samples / wall if wall else None,
            "resumed_from": relative_path(trainer.ckpt_path, trainer),
            **checkpoint_entries(trainer),
            "metrics": metric_entries(trainer.callback_metrics),
            "evaluations": self._earlier,
        }

    def _evaluated(self, trainer, status: str, error: dict | None = None) -> None:
        summary = self._read(trainer)
        if summary is None:  # a checkpoint from elsewhere: this directory gets a summary of its own
            summary = {
                "status": status,
                "error": error,
                "config": yaml.safe_load(provenance.saved_config(trainer) or "null"),
                **(self._facts or {}),
                "data": data_entry(trainer.datamodule),
            }
            summary |= {"metrics": {}, "evaluations": []}
        stage = trainer.state.fn.value
        metrics = metric_entries({k: v for k, v in trainer.callback_metrics.items() if stage_of(k) in ("val", "test")})
        data = data_entry(trainer.datamodule)
        summary["evaluations"].append(
            {
                "subcommand": stage,
                "status": status,
                "error": error,
                "checkpoint": relative_path(trainer.ckpt_path, trainer),
                "checkpoint_epoch": self._loaded.get("epoch"),
                "checkpoint_step": self._loaded.get("global_step"),
                "finished": iso_time(time.time()),
                "data": data,
                "metrics": metrics,
            }
        )
        if stage == "test":  # validate scores a checkpoint, not the end of fit: it stays under evaluations
            fitted = summary.get("data") or (summary.get("config") or {}).get("data")
            if same_data(fitted, data):
                summary["metrics"].update(metrics)
            else:  # another dataset's score: under its own name, never as the run's
                summary.setdefault("results", {}).setdefault(data_label(data), {}).update(metrics)
        self._write(trainer, summary)

    def _log_best(self, trainer) -> None:
        best = contract.monitored_checkpoint(trainer)
        if best is not None and best.best_model_score is not None:
            _log_scores(trainer, {best_tag(best.monitor): best.best_model_score})

    def _path(self, trainer) -> Path | None:
        folder = run_folder(trainer)
        if not trainer.is_global_zero or trainer.fast_dev_run or folder is None:
            return None
        return folder / self.filename

    def _read(self, trainer) -> dict | None:
        """The run's summary so far, or None. A file that is not one (corrupt, or another tool's) is kept under a
        new name, with a warning, and a new summary started: a bad summary never fails or loses a run."""
        path = self._path(trainer)
        if path is None or not path.is_file():
            return None
        try:
            summary = json.loads(path.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            problem = f"not JSON ({error})"
        else:
            shapes = {"evaluations": list, "metrics": dict}
            found = summary if isinstance(summary, dict) else {}
            wrong = [key for key, kind in shapes.items() if not isinstance(found.get(key), kind)]
            if not wrong:
                return summary
            problem = f"not a run summary (no {' or '.join(wrong)})"
        kept = free_path(path.with_name(f"{path.stem}.unreadable{path.suffix}"))
        path.rename(kept)
        rank_zero_warn(f"{path} is {problem}: kept as {kept.name}, starting a new summary")
        return None

    def _write(self, trainer, summary: dict) -> None:
        path = self._path(trainer)
        if path is not None:
            write_json(path, summary)


def _log_scores(trainer, scores: dict) -> None:
    """To every logger: a scalar in TensorBoard (and its HPARAMS entry), a metric in MLflow, W&B and metrics.csv."""
    if trainer.is_global_zero:
        for logger in trainer.loggers:
            logger.log_metrics(scores, step=trainer.global_step)
