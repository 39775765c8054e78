"""A sweep's trial as a training process of its own: the sweep worker starts `python -m <package> fit ...` (behind a
launcher such as torchrun, if one is given) and waits for it; the fit reports each validation to its trial in the
study's storage and stops when the trial is pruned.

The worker adds ReportToTrial to the fit's command line (`--trainer.callbacks+=`), as any callback is added: the
command line survives every launcher (torchrun, srun, Lightning's own re-execution of the command for its other
ranks), and the CLI knows nothing of sweeps. Optuna is imported only when a trial's fit starts: it stays an optional
extra of the library.
"""

import os
import sys
from pathlib import Path

from lightning.pytorch.callbacks import Callback

from lightning_runs.errors import TrialRefusal
from lightning_runs.run_folders import read_summary, run_folder

# A cross-validated trial's fold k reports epoch e as step k * FOLD_STEPS + e: the pruner compares each fold with the
# same fold of other trials, and no fit runs this many epochs.
FOLD_STEPS = 1_000_000
STORAGE = "LIGHTNING_RUNS_SWEEP_STORAGE"  # the study's storage URL, for a trial's fit (ReportToTrial)
# A SQLite file takes one writer at a time: a writer waits up to this long for its turn instead of failing with
# "database is locked" (a trial's writes are a few rows an epoch).
SQLITE_TIMEOUT_S = 60


def open_storage(url: str, **heartbeat):
    """`url`: an SQLAlchemy URL (sqlite:///..., postgresql://...), or else the path of a journal file, as
    Optuna's own command line reads it. The heartbeat's arguments are RDBStorage's (a journal has none)."""
    import optuna

    if "://" not in url:
        lock = optuna.storages.journal.JournalFileSymlinkLock(url)  # the lock Optuna's own appends take
        repair_journal(Path(url), lock)
        try:  # Optuna replays every record here, reading each one's keys unchecked
            return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(url, lock_obj=lock))
        except (KeyError, TypeError, AttributeError, IndexError) as error:  # a ValueError: storage.py names the file
            raise ValueError(f"a record not as Optuna writes it: {type(error).__name__} {error}") from None
    engine = {"connect_args": {"timeout": SQLITE_TIMEOUT_S}} if url.startswith("sqlite") else {"pool_pre_ping": True}
    return optuna.storages.RDBStorage(url, engine_kwargs=engine, **heartbeat)


def repair_journal(path: Path, lock) -> None:
    """A journal whose last line a killed worker left partial would get the next record appended onto it, and the
    study be unreadable for good: it is cut back to its last whole record first, under Optuna's own lock, said once."""
    if not path.is_file():
        return
    lock.acquire()
    try:
        with path.open("rb+") as journal:
            content = journal.read()
            if not content or content.endswith(b"\n"):
                return
            journal.truncate(content.rfind(b"\n") + 1)
        print(f"{path}: its last record was cut short (a worker stopped mid-write); removed it", file=sys.stderr)
    finally:
        lock.release()


class ReportToTrial(Callback):
    """Rank zero records the run folder on the trial (user attr "run") and reports `metric` after every validation
    (`trial.report(value, epoch)`); when the pruner says so, every rank stops at the end of that epoch, with its
    checkpoints, and the trial's user attr "pruned_at_epoch" tells the worker why. A fit whose first validation logs
    no `metric` is refused (TrialRefusal, user attr "refused"): its worker says the line once as it stops the sweep,
    since every trial would do the same."""

    def __init__(
        self, study: str, trial_id: int, metric: str, pruner: dict, offset: int = 0, storage: str | None = None
    ) -> None:
        self.storage = storage or os.environ.get(STORAGE, "")  # the worker's, unless given
        self.study, self.trial_id, self.metric, self.pruner = study, trial_id, metric, pruner
        self.offset = offset  # a fold's steps (FOLD_STEPS)

    def on_fit_start(self, trainer, pl_module) -> None:
        if trainer.is_global_zero:
            import optuna

            pruner = optuna.pruners.MedianPruner(**self.pruner)  # the storage keeps no pruner: the sweep's
            study = optuna.load_study(study_name=self.study, storage=open_storage(self.storage), pruner=pruner)
            self._trial = optuna.trial.Trial(study, self.trial_id)
            self._trial.set_user_attr("run", str(run_folder(trainer) or trainer.default_root_dir))

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.state.fn != "fit":  # `validate` of a trial's run, built from its config: nothing to report
            return
        if self.metric not in trainer.callback_metrics:  # the sanity check's already: refused before training
            refused = (
                f"the sweep scores {self.metric}, which {type(pl_module).__name__} does not log in validation (it"
                f" logs: {', '.join(sorted(trainer.callback_metrics)) or 'nothing'}); give --metric <one of them>"
                " and its --direction"
            )
            if trainer.is_global_zero:
                self._trial.set_user_attr("refused", refused)
            raise TrialRefusal(refused)
        if trainer.sanity_checking:  # Lightning's two batches before training: not an epoch's score
            return
        prune = False
        if trainer.is_global_zero:
            self._trial.report(float(trainer.callback_metrics[self.metric]), step=self.offset + trainer.current_epoch)
            prune = self._trial.should_prune()
        if trainer.strategy.broadcast(prune):  # the same decision on every rank
            if trainer.is_global_zero:
                self._trial.set_user_attr("pruned_at_epoch", trainer.current_epoch)  # of the fold that was pruned
            trainer.should_stop = True


def fit_finished(trial) -> bool:
    """Whether a trial's fit had trained all its epochs when a stop ended its process: its run's summary.json says
    `completed` (a stop after the last step, records/summary.py). Its score then counts."""
    run = trial.user_attrs.get("run")
    try:
        return run is not None and read_summary(Path(run) / "summary.json").get("status") == "completed"
    except (OSError, ValueError):  # no summary, or not one: the fit did not get that far
        return False
