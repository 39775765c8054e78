"""The block `fit` ends with: where the run went, how it ended, what it scored and saved, what to run next. Its facts
are RunSummary's record, the one summary.json holds."""

from pathlib import Path

from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.loggers import MLFlowLogger, TensorBoardLogger
from lightning.pytorch.utilities.model_helpers import is_overridden

from lightning_runs.console import duration, program, say
from lightning_runs.records.run_summary import RunSummary


def report_fit(trainer, tested: dict | None = None) -> None:
    """Said on rank zero, after the fit (and the test of its best checkpoint, `tested`: what that test logged)."""
    if not trainer.is_global_zero:
        return
    if trainer.fast_dev_run:
        return say("fast_dev_run: one batch of each loop ran; no run folder, checkpoint or summary was written")
    record = next((c.record for c in trainer.callbacks if isinstance(c, RunSummary)), None) or {}
    run = getattr(trainer.logger, "log_dir", None)
    here = lambda path: Path(path) if run is None else Path(run) / path  # noqa: E731 - summary paths are the run's
    stopper = next((c for c in trainer.callbacks if isinstance(c, EarlyStopping) and c.stopped_epoch), None)
    epochs = f"{record.get('epochs', trainer.current_epoch)} of {trainer.max_epochs} epochs"
    epochs += f", stopped early on {stopper.monitor}" if stopper else ""
    rate = record.get("samples_per_sec")
    lines = [f"Fit {record.get('status', 'ended')}: {epochs} in {duration(record.get('wall_time_s'))}"]
    lines[0] += f", {rate:,.0f} samples/s" if rate else ""
    lines.append(f"  run folder   {run}")
    best, last = record.get("best_checkpoint"), record.get("last_checkpoint")
    if best:
        score = "none" if best["score"] is None else f"{best['score']:.4f}"
        lines.append(f"  best {best['monitor']} {score}: {here(best['path'])}")
    if last:
        lines.append(f"  last         {here(last)}")
    for metric, value in (tested or {}).items():
        lines.append(f"  {metric:12} {float(value):.4f} of the best checkpoint")
    # Tested already (the fit's --test_best): no test command to suggest.
    testable = (best or last) and is_overridden("test_step", trainer.lightning_module) and not tested
    nexts = [f"{program()} test --ckpt_path {here(best['path'] if best else last)}"] if testable else []
    if isinstance(trainer.logger, TensorBoardLogger):
        nexts.append(f"tensorboard --logdir {trainer.logger.save_dir}")
    elif isinstance(trainer.logger, MLFlowLogger):
        uri = trainer.logger.experiment.tracking_uri
        nexts.append(f"mlflow ui --backend-store-uri {uri}" if uri.startswith("sqlite:") else f"open {uri}")
    lines += [f"  {'next' if i == 0 else '':12} {command}" for i, command in enumerate(nexts)]
    say("\n".join(lines))
