"""A user's StatefulDataLoader (as torchdata's docs show it: shuffled, no generator of its own) under DDP, stopped
inside an epoch and resumed, ends with the uninterrupted fit's weights on every rank: with and without workers, with a
random draw per sample. Lightning's one-file checkpoint holds rank zero's loader state only, draws each epoch's order
from a sampler it wraps (DistributedSamplerWrapper) whose generator no state holds, and makes the resumed epoch's
iterator before it sets the sampler's epoch; RandomState keeps every rank's loader state and that order."""

import subprocess
import sys

import lightning as L
import pytest
import torch
from test_exact_restarts import BATCHES, Dropout, Points, Stateful, fit
from tiny_launchers import launch
from tiny_runs import QUIET, assert_same_checkpoint, load, process_environment
from torch.utils.data import DataLoader, Dataset, DistributedSampler, TensorDataset
from torchdata.stateful_dataloader import StatefulDataLoader
from torchdata.stateful_dataloader.sampler import StatefulDistributedSampler

from lightning_runs.checkpoints import WorkerRandomState
from lightning_runs.testing import CrashAt, SignalAt

PER_EPOCH = 6  # 192 training points, 96 a rank, in batches of 16
LAST = "runs/tiny/version_0/checkpoints/last.ckpt"


class Noisy(Dataset):
    """Points with noise drawn as each is read (an augmentation)."""

    def __init__(self, points: TensorDataset) -> None:
        self.points = points

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, i: int):
        x, y = self.points[i]
        return x + 0.1 * torch.rand(x.shape), y


class UserPoints(L.LightningDataModule):
    """A user's DataModule over the tiny task's points; `keep_worker_rng`: the library's WorkerRandomState around it."""

    num_classes, sample_shape = 3, (4,)  # what the tiny task's model is built from

    def __init__(self, workers: int = 0, noisy: bool = False, keep_worker_rng: bool = False, persistent: bool = False):
        super().__init__()
        self.workers, self.noisy, self.keep, self.persistent = workers, noisy, keep_worker_rng, persistent

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(0)
        points = torch.randn(224, 4, generator=generator)
        labels = (points @ torch.randn(4, 3, generator=generator)).argmax(dim=1)
        self.train, self.val = TensorDataset(points[:192], labels[:192]), TensorDataset(points[192:], labels[192:])

    def train_dataloader(self):
        data = Noisy(self.train) if self.noisy else self.train
        data = WorkerRandomState(data) if self.keep else data
        kept = self.persistent  # the workers, with their RNG, go on from one epoch to the next
        return StatefulDataLoader(data, batch_size=16, shuffle=True, num_workers=self.workers, persistent_workers=kept)

    def val_dataloader(self):
        return StatefulDataLoader(self.val, batch_size=16)


@pytest.mark.slow  # three DDP fits as processes
@pytest.mark.parametrize(
    "data",
    [
        ["--data.noisy=true"],
        ["--data.workers=2"],
        ["--data.workers=2", "--data.noisy=true", "--data.keep_worker_rng=true"],
    ],
    ids=["no_workers_noisy", "two_workers", "two_workers_noisy"],
)
def test_a_users_stateful_loader_under_ddp_resumes_inside_an_epoch_bit_for_bit(tmp_path, data):
    fit = ddp_fit(data, epochs=2)
    # A step checkpoint inside the second epoch (its third batch), then a crash in the batch after it.
    whole, resumed = whole_and_resumed(tmp_path, fit, ["--last_checkpoint.every_n_train_steps=4"], crash=9, saved=8)
    assert resumed["global_step"] == 2 * PER_EPOCH
    assert_same_checkpoint(whole, resumed)


@pytest.mark.slow  # DDP fits as processes
@pytest.mark.parametrize(
    "data",
    [
        ["--data.noisy=true"],
        ["--data.workers=2", "--data.noisy=true", "--data.keep_worker_rng=true"],
        ["--data.workers=2", "--data.noisy=true", "--data.keep_worker_rng=true", "--data.persistent=true"],
    ],
    ids=["no_workers_noisy", "two_workers_noisy", "two_persistent_workers_noisy"],
)
def test_a_users_stateful_loader_under_ddp_resumes_from_an_epochs_end_bit_for_bit(tmp_path, data):
    # The resumed epoch's iterator was made before its epoch was set: it took epoch 0's order (issue found 2026-12-07).
    # Made again, it drew its workers' base seed a second time, from a later RNG state: their noise differed.
    whole, resumed = whole_and_resumed(tmp_path, ddp_fit(data, epochs=3), [], crash=8, saved=PER_EPOCH)
    assert resumed["global_step"] == 3 * PER_EPOCH
    assert_same_checkpoint(whole, resumed)


def ddp_fit(data: list[str], epochs: int) -> list[str]:
    fit = [sys.executable, "-m", "tiny_tasks", "fit", *QUIET, "--model=test_exact_restarts.DropoutClassifier"]
    fit += ["--data=test_ddp_loaders.UserPoints", *data, f"--trainer.max_epochs={epochs}"]
    return [*fit, "--trainer.strategy=ddp", "--trainer.devices=2", "--trainer.accelerator=cpu"]


def whole_and_resumed(tmp_path, fit: list[str], saving: list[str], crash: int, saved: int) -> tuple[dict, dict]:
    """The fit uninterrupted (in whole/), and the same crashed as step `crash` begins, its last checkpoint at step
    `saved`, then resumed: both last checkpoints."""
    (tmp_path / "whole").mkdir()
    launch(tmp_path / "whole", fit)
    stop = [*fit, *saving, "--trainer.callbacks+=lightning_runs.testing.CrashAt", f"--trainer.callbacks.step={crash}"]
    crashed = subprocess.run(stop, capture_output=True, text=True, timeout=300, env=process_environment())
    assert crashed.returncode != 0 and load(LAST)["global_step"] == saved, crashed.stderr[-2000:]
    launch(tmp_path, [*fit, "--ckpt_path=last"])
    return load(tmp_path / "whole" / LAST), load(LAST)


def test_a_checkpoint_without_the_ranks_loader_states_resumes_as_before(tmp_path):
    # One process, a checkpoint of the previous version (no `ranks_loaders` nor `epoch_starts`): Lightning's own loader
    # state resumes the epoch, as it did.
    whole = fit(tmp_path / "whole", Dropout, Stateful, epochs=2)
    fit(tmp_path / "resumed", Dropout, Stateful, epochs=2, stop=SignalAt(step=BATCHES + 1))
    last = tmp_path / "resumed/checkpoints/last.ckpt"
    checkpoint = load(last)
    assert checkpoint["callbacks"]["RandomState"].pop("ranks_loaders") == []  # one process: Lightning's own copy
    del checkpoint["callbacks"]["RandomState"]["epoch_starts"]
    torch.save(checkpoint, last)
    assert_same_checkpoint(whole, fit(tmp_path / "resumed", Dropout, Stateful, epochs=2))


class PersistentWorkers(L.LightningDataModule):
    def __init__(self, by_epoch: bool) -> None:
        super().__init__()
        self.by_epoch = by_epoch

    def train_dataloader(self):
        data = WorkerRandomState(Points((4,), noisy=True))
        # A sampler shuffled by its epoch (a DistributedSampler, as Lightning's own), or by its generator's draws.
        shuffled = {"sampler": StatefulDistributedSampler(data, 1, 0)} if self.by_epoch else {"shuffle": True}
        return StatefulDataLoader(data, batch_size=8, num_workers=2, persistent_workers=True, **shuffled)


@pytest.mark.parametrize("by_epoch", [False, True], ids=["shuffled", "shuffled_by_epoch"])
def test_a_loader_whose_workers_persist_resumes_from_an_epochs_end_bit_for_bit(tmp_path, by_epoch):
    # One process. Its workers (their RNG) go on from one epoch to the next: the resumed run's started from their seeds,
    # and drew those from the global RNG, which the uninterrupted run had not (its dropout masks came apart too).
    data = lambda: PersistentWorkers(by_epoch)  # noqa: E731
    whole = fit(tmp_path / "whole", Dropout, data, epochs=2)
    with pytest.raises(RuntimeError, match="crash at step"):
        fit(tmp_path / "resumed", Dropout, data, epochs=2, stop=CrashAt(step=BATCHES + 2))
    assert load(tmp_path / "resumed/checkpoints/last.ckpt")["global_step"] == BATCHES  # the first epoch's end
    assert_same_checkpoint(whole, fit(tmp_path / "resumed", Dropout, data, epochs=2))


def by_epoch(data) -> DistributedSampler:
    return DistributedSampler(data, num_replicas=1, rank=0)  # a user's one loader for DDP and one process


LOADERS = {  # their samplers order each epoch by its number (`set_epoch`)
    "stateful_loader": lambda data: StatefulDataLoader(data, batch_size=8, sampler=by_epoch(data)),
    "two_workers": lambda data: DataLoader(
        data, batch_size=8, sampler=StatefulDistributedSampler(data, 1, 0), num_workers=2
    ),
    "own_generator": lambda data: DataLoader(data, batch_size=8, sampler=by_epoch(data), generator=torch.Generator()),
}


class Loader(L.LightningDataModule):
    def __init__(self, make) -> None:
        super().__init__()
        self.make = make

    def train_dataloader(self):
        return self.make(Points((4,), noisy=True))


@pytest.mark.parametrize("make", list(LOADERS.values()), ids=list(LOADERS))
def test_a_sampler_shuffled_by_its_epoch_resumes_from_an_epochs_end_bit_for_bit(tmp_path, make):
    # One process. Lightning makes the resumed epoch's iterator before it sets the sampler's epoch: one made eagerly
    # (workers fetch ahead, torchdata's batch sampler lists its sampler) took epoch 0's order. Made again, it must draw
    # from a loader's own generator as it was (`own_generator`: exact before, as its iterator is lazy).
    whole = fit(tmp_path / "whole", Dropout, lambda: Loader(make), epochs=2)
    with pytest.raises(RuntimeError, match="crash at step"):
        fit(tmp_path / "resumed", Dropout, lambda: Loader(make), epochs=2, stop=CrashAt(step=BATCHES + 2))
    assert load(tmp_path / "resumed/checkpoints/last.ckpt")["global_step"] == BATCHES  # the first epoch's end
    assert_same_checkpoint(whole, fit(tmp_path / "resumed", Dropout, lambda: Loader(make), epochs=2))
