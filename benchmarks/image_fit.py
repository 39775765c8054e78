"""One fit of benchmarks/images.py: the project's model on a folder of images, fed by the template's
ImageFolderDataModule or by the plain script a user would otherwise write (torchvision's ImageFolder, random_split,
a DataLoader), with the same transforms, workers and loader options.

    python -m benchmarks.image_fit {template,plain} <folder> --workers 2 --steps 200

Prints one JSON line: when the first training step began (wall clock, for the caller's time to the first step),
training samples/s and CPU time per sample after `--warmup` steps, the peak PSS of the process and its workers
(sampled every 0.2 s), and the machine's load average.
The training process runs one torch thread: the workers get the other cores.
"""

import argparse
import contextlib
import json
import os
import threading
import time
from functools import partial

import lightning as L
import psutil
import torch
from lightning.pytorch.callbacks import Callback
from torch.utils.data import DataLoader, Subset, random_split
from torchvision.datasets import ImageFolder
from torchvision.io import ImageReadMode, decode_image
from torchvision.transforms import v2

from project.images import ImageFolderDataModule
from project.model import DigitsClassifier
from project.networks import DigitsCNN

# The default (32, 64) spends ~440 ms a step on 32x32 batches of 64 here, which would hide the loader entirely;
# (8, 16) takes ~18 ms, about what 0 workers need to decode and augment a batch.
NETWORK = partial(DigitsCNN, channels=(8, 16))


def cpu_seconds() -> float:
    """User and system CPU time of this process and its live children (the loader's persistent workers)."""
    total = 0.0
    for process in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system
    return total


class Clock(Callback):
    """Wall and CPU seconds of the training steps after `warmup`, epoch ends included: the CPU time per sample is
    what each side costs, and moves much less than the wall time when other jobs share the cores."""

    def __init__(self, warmup: int) -> None:
        self.warmup, self.first_step_at, self.started = warmup, None, None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self.first_step_at is None:
            self.first_step_at = time.time()
        if trainer.global_step == self.warmup:
            self.started, self.cpu = time.perf_counter(), cpu_seconds()

    def on_train_end(self, trainer, pl_module) -> None:
        self.seconds, self.steps = time.perf_counter() - self.started, trainer.global_step - self.warmup
        self.cpu = cpu_seconds() - self.cpu


class PeakMemory(threading.Thread):
    """The largest sum of PSS (shared pages split between the processes sharing them) over this process and its
    children: forked workers share the parent's pages, so a sum of RSS would count those once per worker."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0

    def run(self) -> None:
        me = psutil.Process()
        while True:
            total = 0
            for process in [me, *me.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):  # a worker that ended meanwhile
                    total += process.memory_full_info().pss
            self.peak = max(self.peak, total)
            time.sleep(0.2)


def plain_fit(root: str, options: argparse.Namespace, trainer: L.Trainer) -> None:
    """What a user writes without the template: the same decode, transforms and loader options."""
    size = (32, 32)
    decode = partial(decode_image, mode=ImageReadMode.RGB)
    train_transform = v2.Compose(
        [v2.RandomResizedCrop(size, scale=(0.8, 1.0), antialias=True), v2.RandomHorizontalFlip(),
         v2.ToDtype(torch.float32, scale=True)]
    )  # fmt: skip
    eval_transform = v2.Compose([v2.Resize(size, antialias=True), v2.ToDtype(torch.float32, scale=True)])
    dataset = ImageFolder(root, transform=train_transform, loader=decode)
    train, _, _ = random_split(range(len(dataset)), [0.8, 0.1, 0.1], torch.Generator().manual_seed(0))
    loader_options = {"batch_size": 64, "num_workers": options.workers, "persistent_workers": options.workers > 0}
    # Per-channel statistics of the train split, in one pass over it.
    unaugmented = Subset(ImageFolder(root, transform=eval_transform, loader=decode), list(train))
    sums, squares, count = torch.zeros(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64), 0
    for images, _ in DataLoader(unaugmented, **loader_options):
        sums += images.double().sum((0, 2, 3))
        squares += images.double().square().sum((0, 2, 3))
        count += images.numel() // 3
    mean = sums / count
    std = ((squares - count * mean.square()) / (count - 1)).sqrt()
    model = DigitsClassifier(NETWORK, len(dataset.classes), (3, *size))
    model.input_mean.copy_(mean.float().view(3, 1, 1).expand_as(model.input_mean))
    model.input_std.copy_(std.float().view(3, 1, 1).expand_as(model.input_std))
    loader = DataLoader(Subset(dataset, list(train)), shuffle=True, drop_last=True, **loader_options)
    trainer.fit(model, train_dataloaders=loader)


def template_fit(root: str, options: argparse.Namespace, trainer: L.Trainer) -> None:
    datamodule = ImageFolderDataModule(root, num_workers=options.workers)
    trainer.fit(DigitsClassifier(NETWORK, datamodule.num_classes, datamodule.sample_shape), datamodule=datamodule)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", choices=["template", "plain"])
    parser.add_argument("root")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    options = parser.parse_args()
    torch.set_num_threads(1)
    memory = PeakMemory()
    memory.start()
    clock = Clock(options.warmup)
    trainer = L.Trainer(
        accelerator="cpu", devices=1, max_steps=options.warmup + options.steps, limit_val_batches=0,
        num_sanity_val_steps=0, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, callbacks=[clock],
    )  # fmt: skip
    (template_fit if options.data == "template" else plain_fit)(options.root, options, trainer)
    result = {
        "first_step_at": clock.first_step_at,
        "samples_per_sec": clock.steps * 64 / clock.seconds,
        "cpu_us_per_sample": clock.cpu / (clock.steps * 64) * 1e6,
        "load": os.getloadavg()[0],  # other jobs on the machine, over the last minute
        "peak_pss_mb": memory.peak / 2**20,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
