"""RandomState: the RNG states in every checkpoint, so that a resumed run draws what an uninterrupted one draws, and
what a restart needs that Lightning's checkpoint lacks: which parameters train, and an epoch's start.

Trainer(callbacks=[RandomState()])
"""

from collections.abc import Callable
from typing import Any

import torch
from lightning.pytorch import LightningDataModule
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import CombinedLoader
from lightning.pytorch.utilities.model_helpers import is_overridden
from torch.utils.data import RandomSampler

from lightning_runs.checkpoints.rng import rng_state, set_rng
from lightning_runs.console import say
from lightning_runs.distributed import every_ranks
from lightning_runs.private import (
    call_epoch_start_hooks,
    continue_persistent_workers,
    load_loader_states,
    skip_batches,
    wrap_distributed_sampler,
)


class RandomState(Callback):
    """Saves and restores the torch, CUDA, NumPy and Python RNG states (Lightning's checkpoints carry none: a resumed
    run drew other dropout masks), and the torch.Generators of the training loaders
    (`DataLoader(..., generator=torch.Generator().manual_seed(0))`, PyTorch's reproducibility recipe): rebuilt by
    `train_dataloader()`, such a generator would start again from its seed and retrain epoch 1's order. All ranks were
    seeded alike, so rank zero's state (the one written) is every rank's. Not so the loaders' own states (Lightning
    keeps rank zero's): every rank's are gathered here, and each rank resumes inside an epoch from its own (a worker's
    RNG, seeded by rank). Under DDP, Lightning wraps a sampler other than torch's (torchdata's) in a
    DistributedSamplerWrapper that draws each epoch's order from that sampler's generator, which no loader state holds:
    its state before each epoch's draw is kept. Tensors and lists only: weights_only loads it.

    Building the loaders after a restore draws from the restored RNG (torchdata's shuffling sampler seeds itself), and
    so does the restored loader's iterator (its base seed): each later draw was shifted. So the RNG is set as saved
    again once `train_dataloader()` returns, and on a restart inside an epoch once every `on_train_start` has run
    (the module's last), after calling the callbacks' and the module's `on_train_epoch_start`, which Lightning 2.6
    skips there (`BaseFinetuning` unfreezes in it): the first batch is fetched and drawn from the saved state. Any
    restart also restores which parameters train and which norm layers track running statistics (`requires_grad`,
    `track_running_stats`): `BaseFinetuning` freezes again at set-up and unfreezes only at its milestone's epoch.
    """

    def setup(self, trainer, pl_module, stage: str) -> None:
        self._trainer, self._pending = trainer, None
        # Rebuilt at every epoch's start, the loaders draw alike in both runs: nothing to undo.
        if stage == "fit" and not trainer.reload_dataloaders_every_n_epochs:
            datamodule, module = trainer.datamodule, trainer.lightning_module  # Lightning's order of sources
            own = datamodule is not None and is_overridden("train_dataloader", datamodule)
            source = datamodule if own else module if is_overridden("train_dataloader", module) else None
            if source is not None:  # first built in fit_loop.setup_data, or by `estimated_stepping_batches` before it
                _once_around(source, "train_dataloader", self._building, self._built_loaders)

    def _building(self) -> None:
        # The RNG as the training loaders are first built (BoringModel's RandomDataset draws its samples then), kept
        # in every checkpoint: a resume builds them from it again, then takes the checkpoint's own state.
        built = (self._pending or {}).get("built")  # none in a checkpoint of an earlier version
        if built:
            set_rng(built)
        self._built = built or rng_state()

    def _built_loaders(self, loaders) -> None:
        saved, self._pending = self._pending, None
        generators = loader_generators(loaders)
        if saved is not None:
            states = list(saved.get("loaders", []))
            if len(generators) == len(states):  # the same loaders as when saved; else nothing to match them by
                for generator, state in zip(generators, states, strict=True):
                    generator.set_state(state)
            set_rng(saved)  # building drew (torchdata's shuffling sampler seeds itself), as the first build did
        # What the first iterator's order is drawn from: Lightning's DDP wrapper of a sampler draws it before any hook.
        self._unused = {id(generator): generator.get_state() for generator in generators}

    def on_train_start(self, trainer, pl_module) -> None:
        restored, self._restored = getattr(self, "_restored", None), None
        # A resume inside an epoch is exact only where the loader resumes its position: said in one line of its own.
        # (Lightning's own restart stage: a checkpoint taken at an epoch's end restores with its batches counted.)
        loop = trainer.fit_loop
        restarted = trainer.ckpt_path and loop.restarted_mid_epoch
        # Saved after an epoch's last batch, before it ended (a step checkpoint, before validation), Lightning goes on
        # with the next epoch as a restart inside it: its start hooks skipped, its loaders' states the ended epoch's
        # (from them a StatefulDataLoader took no batch; any loader none, its batches taken skipped). Started below.
        ended = bool(restarted) and loop.epoch_loop.batch_progress.current.ready >= trainer.num_training_batches
        resumed_inside = restarted and not ended
        loaders = CombinedLoader(trainer.train_dataloader).flattened
        unused = getattr(self, "_unused", {})
        wrapped = [wrap_distributed_sampler(d, lambda s, wrapper: _epoch_start(s, wrapper, unused)) for d in loaders]
        self._epoch_starts = [sampler for sampler in wrapped if isinstance(sampler, _EpochStart)]
        starts = (restored or {}).get("epoch_starts") or []  # none in a checkpoint of an earlier version
        inside = resumed_inside and len(starts) == len(self._epoch_starts)
        # At an epoch's end too, where a sampler orders by its epoch (`set_epoch`: a DistributedSampler, Lightning's
        # DDP wrapper): `setup_data` made the iterator before the epoch was set, and one made eagerly (workers fetch
        # ahead; torchdata's batch sampler lists its sampler) drew epoch 0's order. Made again, from each loader's own
        # generator as it was before the first (each iterator draws from it).
        at_end = bool(trainer.ckpt_path and not restarted and any(map(_by_epoch, loaders)))
        for generator in loader_generators(loaders) if at_end or ended else []:
            generator.set_state(unused.get(id(generator), generator.get_state()))
        again = inside or at_end or ended
        for i, sampler in enumerate(self._epoch_starts if again else []):  # the epoch's order drawn again
            sampler.generator.set_state(starts[i] if inside else sampler.state)
            sampler.epoch = None
        ranks = (restored or {}).get("ranks_loaders") or []  # none in a checkpoint of an earlier version
        own = ranks[trainer.global_rank] if len(ranks) == trainer.world_size else None
        # `setup_data` made the epoch's iterator from the checkpoint's RNG (its workers' base seed): made again, from it
        drawn = rng_state()
        if at_end and restored:
            set_rng(restored)
        load_loader_states(trainer, [] if ended else own, again=at_end)  # before the epoch's iterator is made from it
        if at_end:
            set_rng(drawn)
        # From an epoch's end, workers kept from one epoch to the next (`persistent_workers`) go on from their saved
        # states (their RNG: WorkerRandomState), as the uninterrupted run's did; it drew no seed for them.
        if trainer.ckpt_path and not resumed_inside and restored and continue_persistent_workers(trainer):
            set_rng(restored)
        stateful = all(_stateful(d) for d in loaders)
        stateful = stateful or is_overridden("state_dict", trainer.datamodule, LightningDataModule)
        shuffled = any(isinstance(getattr(d, "sampler", None), RandomSampler) for d in loaders)
        if resumed_inside and not stateful and shuffled:
            say(
                "resumed inside an epoch whose loader cannot resume its position: the epoch's remaining batches come"
                " from a fresh shuffle, not as the uninterrupted run's (torchdata's StatefulDataLoader resumes exactly)"
            )
        workers = [d.num_workers for d in loaders if getattr(d, "num_workers", 0) and not _stateful(d.dataset)]
        if resumed_inside and stateful and workers:
            say(
                f"resumed inside an epoch whose loader reads in worker processes (num_workers={workers[0]}): a random"
                " draw there (an augmentation) starts again from the worker's seed, unlike the uninterrupted run's (a"
                " StatefulDataLoader over lightning_runs.checkpoints.WorkerRandomState(dataset) resumes them)"
            )
        if restored is None:
            return
        if restored.get("trainable"):  # none in a checkpoint of an earlier version
            train_as(pl_module, restored["trainable"])
        if restarted:  # after every callback's and the module's own on_train_start, as in a fit from the start

            def replay(_) -> None:
                set_rng(restored)  # what the next epoch's hooks, then its iterator, draw from (`ended`)
                call_epoch_start_hooks(trainer)
                if ended:  # its iterator made from no state, once the epoch is set
                    return load_loader_states(trainer, [], again=True)
                if not stateful:  # the batches the epoch had taken, fetched again and dropped: exact in a fixed order
                    skip_batches(trainer, trainer.fit_loop.epoch_loop.batch_progress.current.ready)
                set_rng(restored)

            _once_around(pl_module, "on_train_start", lambda: None, replay)

    def state_dict(self) -> dict[str, Any]:
        trainer, wrapped = getattr(self, "_trainer", None), getattr(self, "_epoch_starts", [])
        generators = [*loader_generators(trainer and trainer.train_dataloader), *(s.generator for s in wrapped)]
        # Collective (each rank's loader states): every rank saves a checkpoint, as Trainer.save_checkpoint requires.
        # One process: Lightning's own copy of its loader states is that rank's, not asked for twice.
        several = trainer is not None and trainer.world_size > 1
        ranks = every_ranks(trainer.fit_loop.on_save_checkpoint().get("combined_loader", [])) if several else []
        return {
            **rng_state(),
            "loaders": [g.get_state() for g in generators],
            "epoch_starts": [sampler.state for sampler in wrapped],
            "ranks_loaders": ranks,
            "trainable": trainable(trainer.lightning_module) if trainer and trainer.lightning_module else {},
            "built": getattr(self, "_built", None) or {},
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        set_rng(state_dict)
        self._restored = self._pending = state_dict


class _EpochStart:
    """A sampler whose order Lightning's DDP wrapper lists once an epoch, drawing it from the sampler's generator: the
    generator's state before each epoch's draw is kept (a resume inside that epoch draws the same order from it), and
    the order is drawn once an epoch (the resume lists it more than once)."""

    def __init__(self, sampler, wrapper, unused: dict) -> None:
        self.sampler, self.wrapper, self.generator = sampler, wrapper, sampler.generator
        self.state = unused.get(id(self.generator), self.generator.get_state())
        self.epoch, self.order = wrapper.epoch, None  # the first epoch's order was drawn before it was wrapped

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self):
        if self.order is None or self.epoch != self.wrapper.epoch:
            self.epoch, self.state = self.wrapper.epoch, self.generator.get_state()
            self.order = list(self.sampler)
        return iter(self.order)


def _epoch_start(sampler, wrapper, unused: dict):
    shuffled = isinstance(getattr(sampler, "generator", None), torch.Generator) and not isinstance(sampler, _EpochStart)
    return _EpochStart(sampler, wrapper, unused) if shuffled else sampler


def _by_epoch(loader) -> bool:
    inner = getattr(getattr(loader, "batch_sampler", None), "sampler", None)
    return any(callable(getattr(sampler, "set_epoch", None)) for sampler in (getattr(loader, "sampler", None), inner))


def _stateful(thing) -> bool:
    return hasattr(thing, "state_dict") and hasattr(thing, "load_state_dict")


def trainable(module: torch.nn.Module) -> dict[str, list[str]]:
    """The parameters that do not train and the norm layers that keep no running statistics, by name."""
    frozen = [name for name, parameter in module.named_parameters() if not parameter.requires_grad]
    norms = [name for name, layer in module.named_modules() if getattr(layer, "track_running_stats", True) is False]
    return {"frozen": frozen, "untracked": norms}


def train_as(module: torch.nn.Module, state: dict[str, list[str]]) -> None:
    frozen, untracked = set(state["frozen"]), set(state["untracked"])
    for name, parameter in module.named_parameters():
        parameter.requires_grad_(name not in frozen)
    for name, layer in module.named_modules():
        if isinstance(getattr(layer, "track_running_stats", None), bool):
            layer.track_running_stats = name not in untracked


def loader_generators(loaders) -> list[torch.Generator]:
    """The torch.Generators that shuffle `loaders` (a DataLoader, or lists and dicts of them, flattened as Lightning
    flattens a fit's loaders), each once, in a fixed order: the loader's own, its sampler's, its batch sampler's
    sampler's."""
    found: dict[int, torch.Generator] = {}
    for loader in CombinedLoader(loaders).flattened:
        inner = getattr(getattr(loader, "batch_sampler", None), "sampler", None)
        for owner in (loader, getattr(loader, "sampler", None), inner):
            generator = getattr(owner, "generator", None)
            if isinstance(generator, torch.Generator):
                found.setdefault(id(generator), generator)
    return list(found.values())


def _once_around(owner, name: str, before: Callable[[], None], after: Callable[[Any], None]) -> None:
    """The next `owner.<name>()` runs `before()`, the method, then `after(its result)`; then the method is as it was.
    Lightning calls `train_dataloader` and `on_train_start` by name on the instance (private.py lists this reliance;
    tests/test_loader_generators.py and tests/test_exact_restarts.py fail when it changes)."""
    method, own = getattr(owner, name), name in vars(owner)

    def once(*args, **kwargs):
        setattr(owner, name, method) if own else delattr(owner, name)
        before()
        result = method(*args, **kwargs)
        after(result)
        return result

    setattr(owner, name, once)
