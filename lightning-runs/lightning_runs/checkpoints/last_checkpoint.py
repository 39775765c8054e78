"""LastCheckpoint and BestCheckpoint: Lightning's ModelCheckpoint, keeping its state across resumes however the run's
folder is spelled (or wherever it was moved), saving step checkpoints only where a resume is exact, and giving ties to
the later epoch.

    Trainer(callbacks=[LastCheckpoint(filename="last"), BestCheckpoint(monitor="val_loss", filename="best")])
"""

from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.utilities import rank_zero_warn

from lightning_runs.checkpoints.random_state import RandomState
from lightning_runs.private import continue_version, save_now, steps_between_saves, unnumbered_logger
from lightning_runs.run_folders import CHECKPOINTS, checkpoint_in

OTHER_DRAWS = "a fit resumed from its checkpoint draws other random numbers (dropout, noise) than the uninterrupted one"


class LastCheckpoint(ModelCheckpoint):
    """ModelCheckpoint that recognises its own folder however the path is spelled, and saves a step checkpoint of an
    epoch's last training batch at the epoch's end instead, after that epoch's validation.

    Lightning restores the saved state (best score, best path) only if the saved `dirpath` equals the current one as a
    string: a run resumed from another working directory, or moved, lost it, and its next epoch replaced best.ckpt
    whatever it scored. A step checkpoint taken before an epoch's validation resumed past it (no best.ckpt for that
    epoch, early stopping without its metric).
    """

    PATHS = ("best_model_path", "kth_best_model_path", "last_model_path")

    def setup(self, trainer, pl_module, stage: str) -> None:
        super().setup(trainer, pl_module, stage)
        # Saved after the other ModelCheckpoints whatever the list's order: with their state as after this epoch.
        if last_part(trainer) is self:
            trainer.callbacks = [*(callback for callback in trainer.callbacks if callback is not self), self]
            if stage == "fit" and RandomState not in map(type, trainer.callbacks):
                rank_zero_warn(f"LastCheckpoint without RandomState() in the callbacks: {OTHER_DRAWS}")

    def _find_last_checkpoints(self, trainer) -> set[str]:
        # `fit(ckpt_path="last")` looked in the folder of the logger's next version, new and empty (a plain script's
        # default logger numbers itself): the run it continues is the newest version with the run's LastCheckpoint
        # file (whichever part is asked first), and the logger writes there again. A logger given its version, or a
        # dirpath, is Lightning's own case.
        logger, last = unnumbered_logger(trainer), last_part(trainer) or self
        if self.dirpath is None and logger is not None:
            name = f"{last.filename or self.CHECKPOINT_NAME_LAST}{self.FILE_EXTENSION}"
            found = checkpoint_in(Path(logger.save_dir or trainer.default_root_dir) / str(logger.name), name)
            if found is None:
                return set()
            continue_version(logger, int(found.parent.parent.name.removeprefix("version_")))
        return super()._find_last_checkpoints(trainer)

    def on_load_checkpoint(self, trainer, pl_module, checkpoint: dict[str, Any]) -> None:
        self.loaded = trainer.ckpt_path  # read by load_state_dict, which Lightning calls next

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved, current, loaded = state_dict.get("dirpath"), self.dirpath, getattr(self, "loaded", None)
        # The run's folder spelled otherwise, or moved or copied (the checkpoint loaded lies in this one): its files.
        ours = [Path(path).resolve() for path in (saved, loaded and Path(loaded).parent) if path]
        if saved and current and saved != current and Path(current).resolve() in ours:

            def respell(path: str) -> str:
                inside = path and Path(path).resolve().parent == Path(saved).resolve()
                return str(Path(current) / Path(path).name) if inside else path

            state_dict = {**state_dict, "dirpath": current, **{k: respell(state_dict.get(k, "")) for k in self.PATHS}}
            state_dict["best_k_models"] = {respell(p): v for p, v in state_dict.get("best_k_models", {}).items()}
        super().load_state_dict(state_dict)
        # Lightning saves the last score it kept but does not load it back: a run resumed after its best epoch ended
        # with None where the uninterrupted run had that score.
        if state_dict.get("dirpath") == self.dirpath:
            self.current_score = state_dict.get("current_score", self.current_score)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict[str, Any]) -> None:
        schedulers_after_epoch(trainer, checkpoint)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if batch_idx + 1 < trainer.num_training_batches:
            super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        super().on_train_epoch_end(trainer, pl_module)  # Lightning's epoch-interval save, if it has one
        # Saved on a step interval, Lightning's own trigger never fires at an epoch's end: here instead. A fit ending at
        # this epoch (early stopping, a signal) leaves `last` at its end, whatever the interval.
        if steps_between_saves(self) or (self.monitor is None and trainer.should_stop):
            save_now(self, trainer)


class BestCheckpoint(LastCheckpoint):
    """LastCheckpoint where a score equal to the kept one replaces it: with a small validation split many epochs reach
    the same top score, and Lightning keeps the first, still trained at a high learning rate."""

    def check_monitor_top_k(self, trainer, current: torch.Tensor | None = None) -> bool:
        if current is not None and self.save_top_k == 1 and self.best_k_models:
            tie = bool(current == self.best_k_models[self.kth_best_model_path])
            if trainer.strategy.reduce_boolean_decision(tie):
                return True
        return super().check_monitor_top_k(trainer, current)


def last_part(trainer) -> LastCheckpoint | None:
    """The run's LastCheckpoint, by type: a BestCheckpoint is one too, and may watch nothing."""
    parts = (c for c in trainer.checkpoint_callbacks if isinstance(c, LastCheckpoint))
    return next((c for c in parts if not isinstance(c, BestCheckpoint)), None)


def last_checkpoint_path(trainer) -> Path:
    """Where the run's LastCheckpoint writes (a BestCheckpoint watching nothing is none); without one, `last.ckpt`
    beside the first ModelCheckpoint's files, where Lightning's `ckpt_path="last"` looks."""
    saving = [c for c in trainer.checkpoint_callbacks if isinstance(c, ModelCheckpoint) and c.dirpath]
    last = last_part(trainer)
    if last is None or not last.dirpath:
        folder = Path(saving[0].dirpath) if saving else Path(trainer.default_root_dir) / CHECKPOINTS
        return folder / f"last{ModelCheckpoint.FILE_EXTENSION}"
    return Path(last.format_checkpoint_name({}))


def ran_to_its_end(trainer) -> bool:
    """Whether the fit trained all it was asked to (a stop on the way sets `should_stop` too)."""
    epochs = trainer.max_epochs not in (None, -1) and trainer.current_epoch >= trainer.max_epochs
    return epochs or (trainer.max_steps not in (None, -1) and trainer.global_step >= trainer.max_steps)


def schedulers_after_epoch(trainer, checkpoint: dict[str, Any]) -> None:
    """A checkpoint taken at an epoch's end holds its ReduceLROnPlateau schedulers as they are after that epoch's step:
    Lightning steps them only after the epoch-end hooks that save (other epoch schedulers step with the last batch),
    and a resume from there replays the epoch's end without the step (fit_loop.on_advance_end, `restarting`), so the
    resumed run was one step behind for good (lr 0.01 where the uninterrupted run had 0.005). The step is taken on the
    live schedulers, read, and undone; the optimizers' learning rates with it."""
    progress = trainer.fit_loop.epoch_progress.current
    if trainer.state.fn != "fit" or progress.processed <= progress.completed or trainer.fit_loop.restarting:
        return  # not between an epoch's last batch and its scheduler step
    if not trainer.lightning_module.automatic_optimization:
        return  # Lightning steps no scheduler for a module that optimizes manually
    for index, config in enumerate(trainer.lr_scheduler_configs):
        if not config.reduce_on_plateau or config.interval != "epoch" or (trainer.current_epoch + 1) % config.frequency:
            continue
        value = trainer.callback_metrics.get(config.monitor)
        if value is None:
            continue  # Lightning skips (or refuses) the step too
        optimizer, before = config.scheduler.optimizer, config.scheduler.state_dict()
        rates = [group["lr"] for group in optimizer.param_groups]
        trainer.lightning_module.lr_scheduler_step(config.scheduler, value)
        checkpoint["lr_schedulers"][index] = config.scheduler.state_dict()
        stepped = trainer.optimizers.index(optimizer) if optimizer in trainer.optimizers else None
        if stepped is not None:
            groups = checkpoint["optimizer_states"][stepped]["param_groups"]
            for group, live in zip(groups, optimizer.param_groups, strict=True):
                group["lr"] = live["lr"]
        config.scheduler.load_state_dict(before)
        for group, rate in zip(optimizer.param_groups, rates, strict=True):
            group["lr"] = rate
