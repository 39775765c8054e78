"""The metrics early stopping and the best checkpoint watch exist: a misspelt `--early_stopping.monitor val/f` or
`--checkpoint.monitor val/f11` is one line as soon as its stage has logged, not Lightning's traceback after a whole
epoch of training.

Metrics are named `stage/name` (docs/contract.md), so a watched name can be checked once its stage has logged once:
`val/...` after the sanity check's validation batches, before any training (or after the first validation, without
a sanity check). A name of a stage that has not logged yet (`train/loss` before training) waits for Lightning's check.
"""

import difflib

from lightning.pytorch.callbacks import Callback, EarlyStopping, ModelCheckpoint

from lightning_runs.checkpoints import BestCheckpoint
from lightning_runs.errors import UsageError


def watched(callbacks) -> list[tuple[str, str]]:
    """(option, metric) of each callback that watches a metric, named as the CLI's options name them."""
    found = []
    for callback in callbacks:
        if isinstance(callback, BestCheckpoint) and callback.monitor:
            found.append(("--checkpoint.monitor", callback.monitor))
        elif isinstance(callback, EarlyStopping | ModelCheckpoint) and callback.monitor:
            option = "--early_stopping.monitor" if type(callback) is EarlyStopping else type(callback).__name__
            found.append((option, callback.monitor))
    return found


class MonitoredMetrics(Callback):
    def __init__(self) -> None:
        self._checked = False

    def on_sanity_check_end(self, trainer, pl_module) -> None:
        self._check(trainer)

    def on_validation_end(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self._check(trainer)

    def _check(self, trainer) -> None:
        if self._checked:
            return
        self._checked = True
        logged = set(trainer.callback_metrics)
        for option, metric in watched(trainer.callbacks):
            stage = metric.partition("/")[0]
            known = sorted(name for name in logged if name.partition("/")[0] == stage)
            if metric not in logged and known:
                close = difflib.get_close_matches(metric, known, n=1)
                raise UsageError(
                    f"{option} {metric}: no such metric is logged; the {stage} metrics are {', '.join(known)}"
                    + (f" (did you mean {close[0]}?)" if close else "")
                )
