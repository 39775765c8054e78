"""A user's StatefulDataLoader under DDP resumes inside an epoch to the uninterrupted fit's weights on every rank."""

import os
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import Callback
from tiny_launchers import launch
from tiny_runs import QUIET, assert_same_checkpoint, load, process_environment
from torch.utils.data import Dataset, TensorDataset
from torchdata.stateful_dataloader import StatefulDataLoader

from lightning_runs.checkpoints import WorkerRandomState

PER_EPOCH = 6  # 192 training points, 96 a rank, in batches of 16


class Noisy(Dataset):
    def __init__(self, points: TensorDataset) -> None:
        self.points = points

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, i: int):
        x, y = self.points[i]
        return x + 0.1 * torch.rand(x.shape), y


class UserPoints(L.LightningDataModule):
    """A user's DataModule: a StatefulDataLoader as torchdata's docs show it (shuffled, no generator of its own),
    optionally read by workers and drawing noise per sample (an augmentation)."""

    num_classes, sample_shape = 3, (4,)  # what the tiny task's model is built from

    def __init__(self, workers: int = 0, noisy: bool = False, keep_worker_rng: bool = False) -> None:
        super().__init__()
        self.workers, self.noisy, self.keep = workers, noisy, keep_worker_rng

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(0)
        points = torch.randn(224, 4, generator=generator)
        labels = (points @ torch.randn(4, 3, generator=generator)).argmax(dim=1)
        self.train, self.val = TensorDataset(points[:192], labels[:192]), TensorDataset(points[192:], labels[192:])

    def train_dataloader(self):
        data = Noisy(self.train) if self.noisy else self.train
        data = WorkerRandomState(data) if self.keep else data
        return StatefulDataLoader(data, batch_size=16, shuffle=True, num_workers=self.workers)

    def val_dataloader(self):
        return StatefulDataLoader(self.val, batch_size=16)


class ShowLoaderState(Callback):
    def on_save_checkpoint(self, trainer, pl_module, checkpoint):
        state = checkpoint["loops"]["fit_loop"]["state_dict"].get("combined_loader")
        print(f"SAVE rank={trainer.global_rank} step={trainer.global_step} {state!r:.3000}", flush=True)

    def on_train_start(self, trainer, pl_module):
        print(f"LOAD rank={trainer.global_rank} {trainer.fit_loop._combined_loader_states_to_load!r:.3000}", flush=True)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        print(f"BATCH rank={trainer.global_rank} step={trainer.global_step} {batch[0].sum().item():.6f} {torch.get_rng_state().float().sum().item()} {type(trainer.train_dataloader.batch_sampler.sampler).__name__} {getattr(trainer.train_dataloader.batch_sampler.sampler, 'epoch', None)} {getattr(trainer.train_dataloader.batch_sampler.sampler, 'seed', None)}", flush=True)
