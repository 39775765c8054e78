"""The checkpoint callbacks of a run: its own folder however spelled, ties to the later epoch, RNG state saved."""

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint

from lightning_runs.private import save_now, steps_between_saves


class RunCheckpoint(ModelCheckpoint):
    """ModelCheckpoint that recognises its own folder however the path is spelled.

    Lightning restores the saved state (best score, best path) only if the saved `dirpath` equals the current one as
    a string: a run saved under an absolute save_dir, or resumed from another working directory, lost it, and its
    next epoch replaced best.ckpt whatever it scored. Paths are compared resolved, and the saved ones are
    rewritten in the current spelling (an old spelling of the same file would otherwise be deleted as a stale one).
    """

    PATHS = ("best_model_path", "kth_best_model_path", "last_model_path")

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved, current = state_dict.get("dirpath"), self.dirpath
        if saved and current and saved != current and Path(saved).resolve() == Path(current).resolve():

            def respell(path: str) -> str:
                inside = path and Path(path).resolve().parent == Path(current).resolve()
                return str(Path(current) / Path(path).name) if inside else path

            state_dict = {**state_dict, "dirpath": current, **{k: respell(state_dict.get(k, "")) for k in self.PATHS}}
            state_dict["best_k_models"] = {respell(p): v for p, v in state_dict.get("best_k_models", {}).items()}
        super().load_state_dict(state_dict)
        # Lightning saves the last score it kept (`current_score`) but does not load it back: a run resumed after
        # its best epoch, improving on nothing since, ended with None where the uninterrupted run had that score.
        if state_dict.get("dirpath") == self.dirpath:
            self.current_score = state_dict.get("current_score", self.current_score)

    # A step checkpoint of an epoch's last training batch would be taken before that epoch's validation, and a run
    # resumed from it went on without that validation: no best.ckpt for the epoch, early stopping without its metric
    # (kill -9 loops ended with more steps than an uninterrupted run, other weights). It is taken at the epoch's end,
    # after validation, where the epoch's own checkpoints are; a checkpoint of any other batch resumes exactly.
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if batch_idx + 1 < trainer.num_training_batches:
            super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        super().on_train_epoch_end(trainer, pl_module)  # Lightning's epoch-interval save, if it has one
        # Saved on a step interval, Lightning's own trigger never fires at an epoch's end: saved here instead. A fit
        # ending at this epoch (early stopping, a signal) leaves `last` at its end, whatever the interval.
        if steps_between_saves(self) or (self.monitor is None and trainer.should_stop):
            save_now(self, trainer)


class BestCheckpoint(RunCheckpoint):
    """ModelCheckpoint where a score equal to the kept one replaces it: ties go to the later epoch.

    With a small validation split many epochs reach the same top score. Lightning keeps the first of them, still
    trained at a high learning rate (epochs 11-17 of 30 across 5 seeds); the later one has seen the schedule out.
    """

    def check_monitor_top_k(self, trainer, current: torch.Tensor | None = None) -> bool:
        if current is not None and self.save_top_k == 1 and self.best_k_models:
            tie = bool(current == self.best_k_models[self.kth_best_model_path])
            if trainer.strategy.reduce_boolean_decision(tie):
                return True
        return super().check_monitor_top_k(trainer, current)


class RandomState(Callback):
    """Saves and restores the torch, CUDA, NumPy and Python RNG states, so a resumed run draws the same dropout
    masks as an uninterrupted one (Lightning's checkpoints do not carry them).

    All ranks were seeded alike and draw alike, so rank zero's state (the one that gets written) is every rank's.
    Stored as tensors and lists only: loadable with `torch.load(weights_only=True)`.
    """

    def state_dict(self) -> dict[str, Any]:
        kind, keys, position, has_gauss, cached = np.random.get_state()
        version, python_state, gauss_next = random.getstate()
        return {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "numpy": [kind, keys.tolist(), position, has_gauss, cached],
            "python": [version, list(python_state), gauss_next],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        torch.set_rng_state(state["torch"])
        if state["cuda"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])
        kind, keys, position, has_gauss, cached = state["numpy"]
        np.random.set_state((kind, np.array(keys, dtype=np.uint32), position, has_gauss, cached))
        version, python_state, gauss_next = state["python"]
        random.setstate((version, tuple(python_state), gauss_next))
