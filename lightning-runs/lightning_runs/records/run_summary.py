"""RunSummary: `<run>/summary.json`, what a run was, how it ended and what it scored, rewritten atomically as it goes.

    Trainer(callbacks=[RunSummary()])      # into the logger's run folder

`running` at fit start and after every epoch, then `completed`, `failed` (with the error) or `interrupted`. A `test` or
`validate` of one of the run's checkpoints adds an entry under `evaluations`; a test on the data the run was fitted on
(its config's data section, the batch size aside) also updates `metrics`, a test on other data never does.
"""

import contextlib
import math
import time
from datetime import datetime, timezone
from pathlib import Path

from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.utilities import rank_zero_warn
from lightning.pytorch.utilities.data import extract_batch_size

from lightning_runs.checkpoints.last_checkpoint import LastCheckpoint, ran_to_its_end
from lightning_runs.configs import config_hash
from lightning_runs.errors import NO_SPACE, Stopped, Terminated
from lightning_runs.processes import this_process
from lightning_runs.records import provenance
from lightning_runs.records.hparams import log_parameters, log_scores, score_tag
from lightning_runs.run_folders import free_path, read_run_data, read_summary, run_folder, write_json


class RunSummary(Callback):
    def __init__(self, filename: str = "summary.json") -> None:
        self.filename = filename
        self._started, self._epochs, self._samples, self._facts, self._loaded = None, 0, 0, {}, {}
        self.record: dict = {}  # the fit's record, also without a run folder: the closing block reads it

    def _gather(self, trainer, pl_module) -> None:
        """Read once, after every callback's setup (the config is saved in SaveConfigInRun's)."""
        if self._facts or not trainer.is_global_zero:
            return
        # Where this command's config was saved in the run folder (rank zero, once setup has run).
        saver = next((c for c in trainer.callbacks if isinstance(c, provenance.SaveConfigInRun)), None)
        path = getattr(saver, "saved", None)
        config = read_run_data(path) if path is not None else None
        self._facts: dict = {
            "config": config,
            "config_hash": config_hash(config),
            "git": provenance.git_state(type(pl_module).__module__.partition(".")[0]),
            "environment": provenance.environment(type(pl_module).__module__.partition(".")[0]),
            "versions": provenance.versions(),
            "device": provenance.device(trainer),
        }

    def on_load_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        self._loaded = {"epoch": checkpoint.get("epoch"), "global_step": checkpoint.get("global_step")}

    def on_fit_start(self, trainer, pl_module) -> None:
        self._started, self._samples = time.time(), 0
        self._gather(trainer, pl_module)
        self._facts["process"] = this_process()  # the fit's: `runs` tells one killed with -9 when it is gone
        self._earlier = (self._read(trainer) or {}).get("evaluations", [])  # a resumed run keeps its tests
        self._write(trainer, self._fit("running", trainer))
        log_parameters(trainer, pl_module)

    def on_train_start(self, trainer, pl_module) -> None:
        self._epochs = trainer.current_epoch  # after a resumed checkpoint was restored

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._samples += extract_batch_size(batch) * trainer.world_size

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._epochs = trainer.current_epoch + 1
        self._write(trainer, self._fit("running", trainer))

    def on_fit_end(self, trainer, pl_module) -> None:
        self._write(trainer, self._fit("completed", trainer))
        best = _best(trainer)
        if best is not None and best.best_model_score is not None:
            log_scores(trainer, {score_tag(f"best_{best.monitor}"): best.best_model_score})

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.state.fn == "validate":
            self._evaluated(trainer, "completed")

    def on_test_end(self, trainer, pl_module) -> None:
        self._evaluated(trainer, "completed")

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        stop = isinstance(exception, KeyboardInterrupt | SystemExit | Stopped | Terminated)
        error = {"type": type(exception).__name__, "message": str(exception)}
        status = "interrupted" if stop else "failed"
        if stop and trainer.state.fn == "fit" and ran_to_its_end(trainer):  # the stop came after the last step
            status, error = "completed", None
        try:
            if trainer.state.fn == "fit":
                self._write(trainer, self._fit(status, trainer, error))
            elif trainer.state.fn in ("validate", "test"):
                self._evaluated(trainer, status, error)
        except OSError as failure:  # raising here would skip Lightning's closing of the event files
            if failure.errno not in NO_SPACE:  # a full disk: the entry point says so, once
                rank_zero_warn(f"could not record the {status} run in {self.filename}: {failure!r}")
        folder = run_folder(trainer)
        if isinstance(exception, OSError) and exception.errno in NO_SPACE and folder is not None:
            exception.filename = exception.filename or str(folder)  # a logger's writer thread names no file: the run
            for path in folder.glob("*") if trainer.is_global_zero else ():
                if path.is_file() and path.stat().st_size == 0:  # a logger's file a full disk left empty: no record
                    path.unlink()

    def _fit(self, status: str, trainer, error: dict | None = None) -> dict:
        now = time.time()
        wall = None if self._started is None else now - self._started
        unmonitored = [c for c in _checkpoints(trainer) if not c.monitor]
        best, last = _best(trainer), next((c for c in unmonitored if type(c) is LastCheckpoint), None)
        last = last or next(iter(unmonitored), None)
        self.record = {
            "status": status,
            "error": error,
            "started": _iso(self._started),
            "updated": _iso(now),
            "wall_time_s": wall,
            **self._facts,
            "epochs": self._epochs,
            "global_step": trainer.global_step,
            "samples_per_sec": self._samples / wall if wall else None,  # validation and checkpoints included
            "resumed_from": _relative(trainer.ckpt_path, trainer),
            "best_checkpoint": best
            and {
                "path": _relative(best.best_model_path, trainer),
                "monitor": best.monitor,
                "mode": best.mode,
                "score": _number(best.best_model_score),
            },
            "last_checkpoint": last and _relative(last.best_model_path, trainer),  # un-monitored: its newest file
            "metrics": {name: _number(value) for name, value in sorted(trainer.callback_metrics.items())},
            "evaluations": getattr(self, "_earlier", []),
        }
        return self.record

    def _evaluated(self, trainer, status: str, error: dict | None = None) -> None:
        self._gather(trainer, trainer.lightning_module)
        summary: dict = self._read(trainer) or {**self._facts, "status": status, "metrics": {}, "evaluations": []}
        stage = trainer.state.fn.value
        metrics = {k: _number(v) for k, v in sorted(trainer.callback_metrics.items()) if not k.startswith("train")}
        data = (self._facts.get("config") or {}).get("data")
        summary["evaluations"].append(
            {
                "subcommand": stage,
                "status": status,
                "error": error,
                "checkpoint": _relative(trainer.ckpt_path, trainer),
                "checkpoint_step": self._loaded.get("global_step"),
                "finished": _iso(time.time()),
                "data": data,
                "metrics": metrics,
            }
        )
        fitted = (summary.get("config") or {}).get("data")
        if stage == "test" and status == "completed" and _same_data(fitted, data):
            summary["metrics"].update(metrics)
            tested = trainer.callback_metrics.items()
            log_scores(trainer, {score_tag(k): v for k, v in tested if k.startswith("test")})
        self._write(trainer, summary)

    def _path(self, trainer) -> Path | None:
        folder = run_folder(trainer)
        ok = trainer.is_global_zero and not trainer.fast_dev_run and folder is not None
        return folder / self.filename if ok else None

    def _read(self, trainer) -> dict | None:
        """The run's summary so far; a file that is none (corrupt, another tool's) is kept aside, with a warning."""
        path = self._path(trainer)
        if path is None or not path.is_file():
            return None
        with contextlib.suppress(OSError, ValueError):  # a device, a folder, too large, not JSON, fields mistyped
            summary = read_summary(path)
            if isinstance(summary.get("evaluations"), list) and isinstance(summary.get("metrics"), dict):
                return summary
        kept = free_path(path.with_name(f"{path.stem}.unreadable{path.suffix}"))
        path.rename(kept)
        rank_zero_warn(f"{path} is not a run summary: kept as {kept.name}, starting a new one")
        return None

    def _write(self, trainer, summary: dict) -> None:
        path = self._path(trainer)
        if path is not None:
            write_json(path, summary)


def _checkpoints(trainer) -> list[ModelCheckpoint]:
    return [c for c in trainer.checkpoint_callbacks if isinstance(c, ModelCheckpoint) and c.best_model_path]


def _best(trainer) -> ModelCheckpoint | None:
    return next((c for c in _checkpoints(trainer) if c.monitor), None)


def _same_data(fitted, evaluated) -> bool:
    """The same class and arguments, the batch size aside; unknown on either side counts as the same."""
    if not isinstance(fitted, dict) or not isinstance(evaluated, dict):
        return True
    strip = lambda d: {**d, "init_args": {k: v for k, v in (d.get("init_args") or {}).items() if k != "batch_size"}}  # noqa: E731
    return strip(fitted) == strip(evaluated)


def _relative(path, trainer) -> str | None:
    """Relative to the run folder when inside it, so the folder can be moved or copied whole."""
    if not path:
        return None
    folder, resolved = run_folder(trainer), Path(path).resolve()
    inside = folder is not None and resolved.is_relative_to(folder.resolve())
    return str(resolved.relative_to(folder.resolve())) if inside else str(resolved)


def _number(value) -> float | str | None:
    value = float(value) if value is not None else None
    return value if value is None or math.isfinite(value) else str(value)  # JSON has no NaN or infinity


def _iso(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")
