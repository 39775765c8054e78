"""Per-step scalars at a fraction of `self.log`'s cost: `train/loss` and `train/samples_per_sec` (`train/grad_norm`:
faults/). Each `self.log` call costs Lightning close to a millisecond of bookkeeping, about what a whole training
step of the default network costs on a CPU; a logger's own `log_metrics` costs ~15 µs a scalar."""

import time

import torch
from jsonargparse.typing import PositiveInt
from lightning.fabric.utilities.throughput import Throughput
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities.data import extract_batch_size


class LossMonitor(Callback):
    """`train/loss`: what `training_step` returned, averaged over ranks (the loss of the global batch), at every
    `log_every_n_steps`-th step, straight to the loggers; into the progress bar as often as the bar redraws."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step = trainer.global_step - 1  # the step this batch's update was, as train/grad_norm and lr/* count it
        logging = step % trainer.log_every_n_steps == 0
        # The batches the bar redraws at, by its own rule: every refresh_rate-th (10 by default: cli.py) and each
        # epoch's last. A value it would never draw is not worth a `self.log`.
        bar, batch = trainer.progress_bar_callback, batch_idx + 1
        rate = max(getattr(bar, "refresh_rate", 1), 1)
        showing = bar is not None and (batch % rate == 0 or batch == trainer.num_training_batches)
        if outputs is None or not (logging or showing):
            return
        # One scalar all-reduce (a no-op on one process); every rank steps equally often, so it always pairs up.
        loss = trainer.strategy.reduce(outputs["loss"].detach(), reduce_op="mean")
        if logging:
            for logger in trainer.loggers:
                logger.log_metrics({"train/loss": loss}, step=step)
        if showing:
            pl_module.log("train/loss", loss, on_step=True, prog_bar=True, logger=False)


class SampleRateMonitor(Callback):
    """`train/samples_per_sec` over all ranks, the mean of the last `window` steps, logged every `window` steps and
    shown in the progress bar.

    Lightning's ThroughputMonitor does not fit here: it synchronizes CUDA after every step, reports nothing
    before 100 steps, and logs validation against the batch index rather than the global step.
    """

    def __init__(self, window: PositiveInt = 10) -> None:
        self.window = window

    def on_train_start(self, trainer, pl_module) -> None:
        # `window` + 1 timestamps give `window` steps; the rate appears once the window is full.
        self._meter = Throughput(world_size=trainer.world_size, window_size=self.window + 1)
        self._elapsed, self._batches, self._samples = 0.0, 0, 0
        self._last = time.perf_counter()  # a run resumed mid-epoch starts without on_train_epoch_start

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        # Restart the clock: validation and checkpointing between epochs are not training time.
        self._last = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        # No CUDA sync: on a GPU the host runs ahead by the queued work, which the rolling window averages out;
        # Lightning's own read of the loss synchronizes at every logged step anyway.
        now = time.perf_counter()
        self._elapsed, self._last = self._elapsed + now - self._last, now
        self._batches += 1
        # This rank's samples (the first tensor's length, in any tuple or dict); the meter multiplies by the world size.
        self._samples += extract_batch_size(batch)
        self._meter.update(time=self._elapsed, batches=self._batches, samples=self._samples)
        if self._batches % self.window:
            return  # a new rate once per window
        rates = self._meter.compute()
        # Throughput names the all-rank rate `samples_per_sec` only when there is more than one rank.
        rate = rates.get("samples_per_sec", rates.get("device/samples_per_sec"))
        if rate is None:
            return
        # To the loggers directly, at this batch's step (`self.log` would cost Lightning close to a millisecond
        # and repeat the value at every later step of the epoch); to the progress bar through `self.log`. A CPU
        # tensor: logging a Python float would copy it to the GPU, and that copy waits for the GPU.
        for logger in trainer.loggers:
            logger.log_metrics({"train/samples_per_sec": rate}, step=trainer.global_step - 1)
        pl_module.log("train/samples_per_sec", torch.tensor(rate), on_step=True, prog_bar=True, logger=False)
