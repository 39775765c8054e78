"""The metrics early stopping and the best checkpoint watch fit the model: checked as soon as the validation stage has
logged once (after the sanity check's batches, before any training; without a sanity check, after the first
validation), never Lightning's traceback after a whole epoch.

Who says what is watched, strongest first:
- the user: `--checkpoint.monitor`, `--early_stopping.monitor` (command line or config);
- the model: `configure_callbacks()` returning a `ModelCheckpoint(monitor=..., mode=...)` (its monitor and mode become
  the run's best checkpoint's, `stated_monitors`) or an `EarlyStopping` (Lightning puts it in place of the run's);
- the recipe's defaults (the owner's cli.py), which follow what the model logs.
A watched metric the model does not log is refused in one line if the user or the model named it; a default falls
back to `val/loss` or `val_loss` (min) where that is logged, early stopping else to what the best checkpoint watches;
where the model logs no validation metric at all (or has no validation) the run keeps no best-by-score checkpoint
(best.ckpt is then the newest) and does not stop early, said in one line; otherwise it is refused, listing what is
logged.

Metrics are named `stage/name` or `stage_name` (contract/names.py). A name of a stage that has not logged yet
(`train/loss` before training) waits for Lightning's check.
"""

import difflib

import torch
from lightning.pytorch.callbacks import Callback, EarlyStopping, ModelCheckpoint
from lightning.pytorch.utilities.model_helpers import is_overridden

from lightning_runs.checkpoints.callbacks import BestCheckpoint, RunCheckpoint
from lightning_runs.console import say
from lightning_runs.contract import parts as contract
from lightning_runs.contract.names import SEPARATORS, stage_of
from lightning_runs.errors import UsageError
from lightning_runs.records.provenance import saved_config_path

VALIDATION = ("val", "validation")  # the stage prefixes a validation loop logs under
FALLBACK = ("loss", "min")  # the one metric name every task has: val/loss, lower is better
OPTIONS = {BestCheckpoint: "--checkpoint.monitor", EarlyStopping: "--early_stopping.monitor"}


def watching(callbacks) -> list[tuple[Callback, str, str]]:
    """(callback, option, metric) of each callback that watches a metric, named as the CLI's options name them."""
    found = []
    for callback in callbacks:
        if isinstance(callback, EarlyStopping | ModelCheckpoint) and callback.monitor:
            option = OPTIONS.get(type(callback), type(callback).__name__)
            found.append((callback, option, callback.monitor))
    return found


def watched(callbacks) -> list[tuple[str, str]]:
    return [(option, metric) for _, option, metric in watching(callbacks)]


def stated_monitors(model) -> list[tuple[str, str]]:
    """(monitor, mode) of the ModelCheckpoints the model's `configure_callbacks()` returns, the run's own excepted."""
    try:
        stated = model.configure_callbacks()
    except Exception:  # a hook that needs the Trainer attached: Lightning calls it again at fit, where it belongs
        return []
    stated = stated if isinstance(stated, list | tuple) else [stated] if stated else []
    return [
        (c.monitor, c.mode)
        for c in stated
        if isinstance(c, ModelCheckpoint) and not isinstance(c, RunCheckpoint) and c.monitor
    ]


def stated_early_stopping(model) -> bool:
    try:
        stated = model.configure_callbacks()
    except Exception:
        return False
    return any(isinstance(c, EarlyStopping) for c in (stated if isinstance(stated, list | tuple) else [stated]))


class MonitoredMetrics(Callback):
    def __init__(self) -> None:
        self._checked = False
        self.strict: set[str] = set()  # options the user or the model gave: refused, never followed, when not logged

    def on_sanity_check_end(self, trainer, pl_module) -> None:
        self._check(trainer, pl_module)

    def on_train_start(self, trainer, pl_module) -> None:
        if not is_overridden("validation_step", pl_module):  # no validation will ever log a val metric
            self._check(trainer, pl_module)

    def on_validation_end(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self._check(trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        # A fit that reaches max_steps inside an epoch stops before that epoch's validation: Lightning's early stopping
        # would raise at the epoch's end for a metric not logged since the sanity check. Nothing is left to stop.
        if trainer.max_steps in (None, -1) or trainer.global_step < trainer.max_steps:
            return
        for callback, _, metric in watching(trainer.callbacks):
            if isinstance(callback, EarlyStopping) and metric not in trainer.callback_metrics:
                unwatch(callback)

    def _check(self, trainer, pl_module) -> None:
        if self._checked:
            return
        self._checked = True
        logged = set(trainer.callback_metrics)
        model = type(pl_module).__name__
        said, missing = [], []
        # The best checkpoint first: early stopping may follow what it watches.
        checkpoints_first = sorted(watching(trainer.callbacks), key=lambda w: not isinstance(w[0], ModelCheckpoint))
        for callback, option, metric in checkpoints_first:
            stage = stage_of(metric) or metric
            if metric in logged or stage not in VALIDATION or getattr(callback, "strict", True) is False:
                continue
            known = sorted(name for name in logged if stage_of(name) == stage)
            ours = type(callback) in OPTIONS and option not in self.strict
            # `val/loss`, or `val_loss` as Lightning's docs log it; else, for early stopping, the best checkpoint's.
            fallbacks = [(f"{stage}{separator}{FALLBACK[0]}", FALLBACK[1]) for separator in SEPARATORS]
            best = contract.monitored_checkpoint(trainer)
            if isinstance(callback, EarlyStopping) and best is not None:
                fallbacks.append((best.monitor, best.mode))
            fallback = next(((name, mode) for name, mode in fallbacks if name in logged), None)
            if ours and fallback:
                follow(callback, *fallback)
                said.append(f"{option} {fallback[0]} ({fallback[1]})")
            elif ours and not known:
                unwatch(callback)
                said.append("best.ckpt is the newest" if isinstance(callback, ModelCheckpoint) else "no early stopping")
            else:
                raise UsageError(_refusal(option, metric, stage, known, model, ours))
            missing.append(metric)
        if said:
            line = f"{model} logs no {' or '.join(dict.fromkeys(missing))}: {'; '.join(said)}"
            say(
                f"{line} (give the monitors, or state them in its configure_callbacks(): python -m pydoc"
                " lightning_runs.contract.parts)"
            )
            _note_in_saved_config(trainer, line)


def _note_in_saved_config(trainer, line: str) -> None:
    """The saved config holds the monitors the command gave; it says as a comment what the run watched instead (a
    comment: the same config run again follows the same way, and its recipe stays the same one)."""
    path = saved_config_path(trainer) if trainer.is_global_zero else None
    if path is not None:
        with path.open("a") as config:
            config.write(f"# The run watched otherwise: {line}. summary.json's best_checkpoint says what it kept.\n")


def _refusal(option: str, metric: str, stage: str, known: list[str], model: str, default: bool) -> str:
    if not known:
        return (
            f"{option} {metric}: {model} logs no {stage} metric; log it in validation_step (self.log('{metric}', ...))"
            " or watch another"
        )
    close = difflib.get_close_matches(metric, known, n=1)
    return (
        f"{option} {metric}: no such metric is logged; the {stage} metrics are {', '.join(known)}"
        + (f" (did you mean {close[0]}?)" if close else "")
        + (
            f"; give {option} <one> with its mode, or have {model}.configure_callbacks() return a ModelCheckpoint"
            " that says it (python -m pydoc lightning_runs.contract.parts)"
            if default
            else ""
        )
    )


def follow(callback, metric: str, mode: str) -> None:
    """Watch `metric` instead, before anything has been scored (the sanity check, or the first validation's end)."""
    callback.monitor = metric
    if isinstance(callback, EarlyStopping):
        callback.mode = mode
        callback.min_delta = abs(callback.min_delta) * (1 if callback.monitor_op == torch.gt else -1)
        callback.best_score = torch.tensor(torch.inf if mode == "min" else -torch.inf)
    else:  # as ModelCheckpoint's __init__ sets them for a mode
        callback.mode, callback.kth_value = mode, torch.tensor(torch.inf if mode == "min" else -torch.inf)


def unwatch(callback) -> None:
    """Nothing to score: the best checkpoint keeps the newest weights (Lightning's rule for no monitor), and early
    stopping never stops (non-strict: a missing metric is no error)."""
    if isinstance(callback, EarlyStopping):
        callback.strict = callback.verbose = False
    else:
        callback.monitor = None
