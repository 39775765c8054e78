"""The default config's job as the plain Lightning script a user would otherwise write: the baseline that
`make bench` holds the template to.

    python -m benchmarks.plain_lightning resolved.yaml      (resolved.yaml: `python -m project fit --print_config`)

A LightningModule (the config's network, label-smoothed cross-entropy, torchmetrics accuracy, AdamW with the
decay / no-decay groups, warmup + cosine per step) and DataLoaders over TensorDatasets (the project's split,
train-split normalization, augmentation after the batch transfer), trained by a Trainer with what such a script
has: TensorBoardLogger, ModelCheckpoint for the best val/acc plus last, EarlyStopping, LearningRateMonitor and the
default progress bar, `self.log` of the loss every step. Torch's defaults elsewhere (AdamW's for-loop on a CPU).
Every number comes from the resolved config, as in benchmarks/plain_loop.py.
"""

import importlib
import json
import sys
import time
from pathlib import Path

import lightning as L
import torch
import torch.nn.functional as F
import yaml
from lightning.pytorch.callbacks import Callback, EarlyStopping, LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import TensorBoardLogger
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics.classification import MulticlassAccuracy

from project.augment import random_affine
from project.schedule import decay_groups, warmup_cosine

from benchmarks.plain_loop import digits_split


class Classifier(L.LightningModule):
    def __init__(self, network, model: dict, data: dict, mean: float, std: float) -> None:
        super().__init__()
        self.network, self.model, self.data, self.mean, self.std = network, model, data, mean, std
        self.train_acc, self.val_acc = MulticlassAccuracy(10, average="micro"), MulticlassAccuracy(10, average="micro")

    def forward(self, images):
        return self.network(((images - self.mean) / self.std).unsqueeze(1))

    def on_after_batch_transfer(self, batch, dataloader_idx):
        images, labels = batch
        if self.trainer.training:
            images = random_affine(images, self.data["rotation"], self.data["shift"])
        return images, labels

    def training_step(self, batch, batch_idx):
        images, labels = batch
        logits = self(images)
        loss = F.cross_entropy(logits, labels, label_smoothing=self.model["label_smoothing"])
        self.train_acc(logits, labels)
        self.log("train/loss", loss, prog_bar=True)
        self.log("train/acc", self.train_acc, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        images, labels = batch
        logits = self(images)
        self.val_acc(logits, labels)
        self.log("val/loss", F.cross_entropy(logits, labels), prog_bar=True)
        self.log("val/acc", self.val_acc)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(decay_groups(self.network, self.model["weight_decay"]), lr=self.model["lr"])
        total = int(self.trainer.estimated_stepping_batches)
        scheduler = warmup_cosine(optimizer, total, round(self.model["warmup_fraction"] * total), self.model["min_lr"])
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


class FitClock(Callback):
    """The fit phase, timed like the project's run summary: from on_fit_start to on_fit_end."""

    def on_fit_start(self, trainer, pl_module):
        self.started = time.perf_counter()

    def on_fit_end(self, trainer, pl_module):
        self.seconds = time.perf_counter() - self.started


def main(config_path: str) -> dict:
    config = yaml.safe_load(Path(config_path).read_text())
    model, data, trainer_config = config["model"]["init_args"], config["data"]["init_args"], config["trainer"]
    L.seed_everything(config["seed_everything"])
    images, labels, split = digits_split(data)  # the same data and split as the plain loop's
    train, val = split["train"], split["val"]
    module, _, name = model["network"]["class_path"].rpartition(".")
    network_class = getattr(importlib.import_module(module), name)
    network = network_class(10, tuple(images.shape[1:]), **model["network"]["init_args"])
    classifier = Classifier(network, model, data, images[train].mean().item(), images[train].std().item())
    batch = data["batch_size"]
    loaders = (
        DataLoader(TensorDataset(images[train], labels[train]), batch_size=batch, shuffle=True, drop_last=True),
        DataLoader(TensorDataset(images[val], labels[val]), batch_size=batch),
    )
    clock = FitClock()
    trainer = L.Trainer(
        accelerator=trainer_config["accelerator"],
        devices=trainer_config["devices"],
        max_epochs=trainer_config["max_epochs"],
        log_every_n_steps=trainer_config["log_every_n_steps"],
        logger=TensorBoardLogger("runs", name="plain_lightning"),
        callbacks=[
            ModelCheckpoint(monitor="val/acc", mode="max", filename="best", save_last=True),
            EarlyStopping(monitor="val/loss", patience=config["early_stopping"]["init_args"]["patience"]),
            LearningRateMonitor(logging_interval="step"),
            clock,
        ],
    )
    trainer.fit(classifier, *loaders)
    steps = trainer.global_step
    return {"fit_seconds": clock.seconds, "samples_per_sec": steps * batch / clock.seconds,
            "val_acc": trainer.callback_metrics["val/acc"].item()}  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
