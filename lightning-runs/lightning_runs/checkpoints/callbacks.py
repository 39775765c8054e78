"""The checkpoint callbacks of a run: its own folder however spelled, ties to the later epoch, RNG state saved."""

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.utilities.model_helpers import is_overridden

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
    masks as an uninterrupted one (Lightning's checkpoints do not carry them), and the generators of the training
    loaders (`DataLoader(..., shuffle=True, generator=torch.Generator().manual_seed(0))`, PyTorch's reproducibility
    recipe), so that a run resumed at an epoch's end shuffles its next epoch as the uninterrupted run does: rebuilt by
    `train_dataloader()`, such a generator would start again from its seed, and the resumed run retrain epoch 1's
    order. Not where the loaders are rebuilt each epoch (`reload_dataloaders_every_n_epochs`): each then starts anew.

    All ranks were seeded alike and draw alike, so rank zero's state (the one that gets written) is every rank's.
    Stored as tensors and lists only: loadable with `torch.load(weights_only=True)`.
    """

    def __init__(self) -> None:
        self._trainer = None

    def setup(self, trainer, pl_module, stage: str) -> None:
        self._trainer = trainer

    def state_dict(self) -> dict[str, Any]:
        kind, keys, position, has_gauss, cached = np.random.get_state()
        version, python_state, gauss_next = random.getstate()
        loaders = self._trainer.train_dataloader if self._trainer is not None else None
        return {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "numpy": [kind, keys.tolist(), position, has_gauss, cached],
            "python": [version, list(python_state), gauss_next],
            "loaders": [generator.get_state() for generator in loader_generators(loaders)],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # Restored before the fit builds its loaders and draws their first batch, with nothing of ours between the
        # two: their generators get the saved states as `train_dataloader()` returns them. (None are saved in a
        # checkpoint from before they were kept.)
        trainer, loaders = self._trainer, list(state.get("loaders", []))
        if (
            loaders
            and trainer is not None
            and trainer.state.fn == "fit"
            and not trainer.reload_dataloaders_every_n_epochs
        ):
            datamodule = trainer.datamodule  # where Lightning takes the loaders from: the DataModule, if it has them
            own = datamodule is not None and is_overridden("train_dataloader", datamodule)
            _restore_on_return(datamodule if own else trainer.lightning_module, loaders)
        torch.set_rng_state(state["torch"])
        if state["cuda"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])
        kind, keys, position, has_gauss, cached = state["numpy"]
        np.random.set_state((kind, np.array(keys, dtype=np.uint32), position, has_gauss, cached))
        version, python_state, gauss_next = state["python"]
        random.setstate((version, tuple(python_state), gauss_next))


def loader_generators(loaders) -> list[torch.Generator]:
    """The torch.Generators that shuffle `loaders` (a DataLoader, or lists and dicts of them, as
    `trainer.train_dataloader` gives them), each once, in a fixed order: the loader's own, its sampler's, its batch
    sampler's sampler's."""
    found: dict[int, torch.Generator] = {}
    if isinstance(loaders, dict):
        loaders = list(loaders.values())
    for loader in loaders if isinstance(loaders, list | tuple) else [loaders]:
        if isinstance(loader, list | tuple | dict):
            found |= {id(generator): generator for generator in loader_generators(loader)}
            continue
        sampler = getattr(loader, "sampler", None)
        inner = getattr(getattr(loader, "batch_sampler", None), "sampler", None)
        for owner in (loader, sampler, inner):
            generator = getattr(owner, "generator", None)
            if isinstance(generator, torch.Generator):
                found.setdefault(id(generator), generator)
    return list(found.values())


def _restore_on_return(source, states: list[torch.Tensor]) -> None:
    """`source.train_dataloader()`, the next time Lightning calls it, gives loaders whose generators hold `states`;
    then the method is the source's own again. (Lightning calls it by name on the instance: nothing else runs between
    building the loaders and drawing their first batch.)"""
    build = source.train_dataloader

    def restoring():
        del source.train_dataloader  # the instance's wrapper: its class's method again
        loaders = build()
        generators = loader_generators(loaders)
        if len(generators) == len(states):  # the same loaders as when it was saved; else nothing to match them by
            for generator, state in zip(generators, states, strict=True):
                generator.set_state(state)
        return loaders

    source.train_dataloader = restoring
