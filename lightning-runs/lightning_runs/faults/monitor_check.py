"""MonitorCheck: every metric a callback monitors (early stopping, a best checkpoint, a plateau scheduler) is one the
module logs, checked once it has logged: after the sanity check, else after the first validation, else after the first
training epoch; one line listing what it logs instead of Lightning's traceback after a whole epoch, or a best.ckpt that
silently never saves. A validation metric (`val/`, `val_`, `valid_`) watched where the fit has no validation loop (no
validation_step, or Trainer(limit_val_batches=0)) is said before the first training step: it can never be logged.

    Trainer(callbacks=[MonitorCheck(), EarlyStopping(monitor="val_loss")])
"""

from lightning.pytorch.callbacks import Callback, EarlyStopping
from lightning.pytorch.utilities.model_helpers import is_overridden

from lightning_runs import configs
from lightning_runs.errors import UsageError


class MonitorCheck(Callback):
    def __init__(self) -> None:
        self._checked = False

    def setup(self, trainer, pl_module, stage: str) -> None:
        # First in the list whatever its order: early stopping may read its metric at validation's end too.
        trainer.callbacks = [self, *(callback for callback in trainer.callbacks if callback is not self)]

    def on_sanity_check_end(self, trainer, pl_module) -> None:
        if any(trainer.num_val_batches):  # else nothing could be logged: an empty split (LoaderCheck's line)
            self._check(trainer, pl_module)

    def on_train_start(self, trainer, pl_module) -> None:
        if not is_overridden("validation_step", pl_module) or trainer.limit_val_batches == 0:
            self._check(trainer, pl_module, unvalidated=True)  # a validation metric can never come: said now

    def on_validation_end(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self._check(trainer, pl_module)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if trainer.max_steps not in (None, -1) and trainer.global_step >= trainer.max_steps:
            # The fit ended inside this epoch, before its validation: nothing is left to stop or compare, and early
            # stopping would raise for a metric it could not have (Lightning checks it at every epoch's end).
            for callback in trainer.callbacks:
                if isinstance(callback, EarlyStopping) and callback.monitor not in trainer.callback_metrics:
                    callback.strict = False
            return
        if trainer.fit_loop.epoch_loop.batch_progress.current.ready:  # else an empty stream (LoaderCheck's line)
            self._check(trainer, pl_module)  # Lightning runs the monitoring callbacks' epoch-end hooks after it

    def _check(self, trainer, pl_module, unvalidated: bool = False) -> None:
        if self._checked or trainer.state.fn != "fit":
            return
        self._checked = not unvalidated
        watched = [(type(c).__name__, c.monitor) for c in trainer.callbacks if _monitors(c)]
        watched += [("its lr scheduler", c.monitor) for c in trainer.lr_scheduler_configs if c.monitor]
        logged, name = sorted(trainer.callback_metrics), type(pl_module).__name__
        for who, metric in watched:
            if metric not in logged and (not unvalidated or configs.test_metric(metric)):
                why = f"which {name} does not log (it logs: {', '.join(logged) or 'nothing yet'}); monitor one of those"
                if unvalidated:
                    why = "a validation metric, but this fit validates nothing (no validation_step, or"
                    why += " Trainer(limit_val_batches=0)); monitor one it logs in training"
                fix = f"{who}(monitor=...)), or none (leave {who} out" if who[0].isupper() else "configure_optimizers"
                raise UsageError(f"{who} monitors {metric}, {why} ({fix})")


def _monitors(callback) -> bool:
    return isinstance(getattr(callback, "monitor", None), str) and getattr(callback, "strict", True) is not False
