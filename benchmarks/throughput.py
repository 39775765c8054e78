"""A benchmark callback: training samples per second and peak GPU memory, written to <run>/throughput.json."""

import json
import time
from pathlib import Path

import torch
from lightning.pytorch.callbacks import Callback


class Throughput(Callback):
    """Times the training part of every epoch (validation excluded), synchronizing the GPU at each end.

    The first epoch also pays for warm-up (CUDA context, cuDNN autotuning, the allocator growing), so the rate
    is over the later epochs when there are any.
    """

    def __init__(self) -> None:
        self.epochs: list[tuple[int, float]] = []  # (samples over all ranks, seconds) per epoch
        self.walls: list[float] = []  # each epoch's wall seconds, its validation included (Lightning runs it inside)
        self._samples, self._seconds, self._start = 0, 0.0, None
        self._in_epoch = False

    def _now(self, trainer) -> float:
        if trainer.strategy.root_device.type == "cuda":
            torch.cuda.synchronize(trainer.strategy.root_device)  # kernels are queued: wait until they ran
        return time.perf_counter()

    def _pause(self, trainer) -> None:
        if self._start is not None:
            self._seconds += self._now(trainer) - self._start
            self._start = None

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._samples, self._seconds, self._start = 0, 0.0, self._now(trainer)
        self._epoch_start = self._start
        self._in_epoch = True

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._samples += len(batch[0]) * trainer.world_size

    def on_validation_start(self, trainer, pl_module) -> None:
        self._pause(trainer)

    def on_validation_end(self, trainer, pl_module) -> None:
        if self._in_epoch:  # not the sanity check before training
            self._start = self._now(trainer)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._pause(trainer)
        self.epochs.append((self._samples, self._seconds))
        self.walls.append(self._now(trainer) - self._epoch_start)
        self._in_epoch = False

    def on_fit_end(self, trainer, pl_module) -> None:
        measured = self.epochs[1:] or self.epochs
        device = trainer.strategy.root_device
        result = {
            "samples_per_sec": sum(s for s, _ in measured) / max(sum(t for _, t in measured), 1e-9),
            "epochs": len(self.epochs),
            "epoch_wall_seconds": self.walls,  # the first pays warm-up and compilation
            "precision": trainer.precision,
            "strategy": type(trainer.strategy).__name__,
            "world_size": trainer.world_size,
            "peak_gpu_mib": torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None,
            "val_acc": float(trainer.callback_metrics["val/acc"]) if "val/acc" in trainer.callback_metrics else None,
        }
        log_dir = trainer.log_dir  # a collective under DDP: every rank asks, rank zero writes
        if trainer.is_global_zero:
            (Path(log_dir) / "throughput.json").write_text(json.dumps(result, indent=2) + "\n")
