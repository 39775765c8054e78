"""The default config's job as a plain PyTorch loop, no framework: the baseline that `make bench` compares with.

    python -m benchmarks.plain_loop resolved.yaml      (resolved.yaml: `python -m project fit --print_config`)

Same split, normalization, network, AdamW groups, warmup + cosine per step, augmentation, epochs, batch size
and shuffling; it evaluates on the validation split and saves a checkpoint after every epoch, as the project
does. It reads every number from the resolved config and builds the split, sample order, network and optimizer
groups with the project's own Lightning-free modules, so it follows the recipe when the recipe changes. It
imports no Lightning: the whole-process comparison includes what importing a framework costs.
"""

import importlib
import json
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import yaml
from sklearn.datasets import load_digits

from lightning_runs.data.batches import ShardSampler, split_indices

from project.augment import random_affine
from project.schedule import decay_groups, warmup_cosine


def digits_split(data: dict) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """The digits (N, 8, 8) raw pixels, labels (N,), and the project's split of them for the config's `data`."""
    digits = load_digits()
    images = torch.as_tensor(digits.images, dtype=torch.float32)  # (1797, 8, 8)
    labels = torch.as_tensor(digits.target)
    return images, labels, split_indices(len(images), data["val_fraction"], data["test_fraction"], data["seed"])


def main(config_path: str) -> dict:
    config = yaml.safe_load(Path(config_path).read_text())
    model, data = config["model"]["init_args"], config["data"]["init_args"]  # both by class path, as printed
    torch.manual_seed(config["seed_everything"])

    images, labels, split = digits_split(data)
    val, train = split["val"], split["train"]
    mean, std = images[train].mean(), images[train].std()

    module, _, name = model["network"]["class_path"].rpartition(".")
    network = getattr(importlib.import_module(module), name)  # the config's class: DigitsCNN, or MLP, or yours
    # The class count and the sample shape from the data, as the CLI links them.
    net = network(int(labels.max()) + 1, tuple(images.shape[1:]), **model["network"]["init_args"])
    optimizer = torch.optim.AdamW(decay_groups(net, model["weight_decay"]), lr=model["lr"], fused=model["fused"])
    batch, epochs = data["batch_size"], config["trainer"]["max_epochs"]
    steps = len(train) // batch  # the ragged last batch is dropped, as in the project
    total = steps * epochs
    scheduler = warmup_cosine(optimizer, total, round(model["warmup_fraction"] * total), model["min_lr"])
    sampler = ShardSampler(len(train), shuffle=True, seed=data["seed"])  # the project's order of training samples
    checkpoint = Path(tempfile.mkdtemp()) / "last.pt"

    started = time.perf_counter()
    for epoch in range(epochs):
        net.train()
        sampler.set_epoch(epoch)
        shuffled = train[sampler.indices()]
        for step in range(steps):
            index = shuffled[step * batch : (step + 1) * batch]
            x = random_affine(images[index], data["rotation"], data["shift"])
            loss = F.cross_entropy(
                net(((x - mean) / std).unsqueeze(1)), labels[index], label_smoothing=model["label_smoothing"]
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
        net.eval()
        with torch.no_grad():
            logits = net(((images[val] - mean) / std).unsqueeze(1))
            val_acc = (logits.argmax(-1) == labels[val]).float().mean().item()
            val_loss = F.cross_entropy(logits, labels[val]).item()
        torch.save({"model": net.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, checkpoint)
    seconds = time.perf_counter() - started
    # The validation numbers show that this is the project's computation: they match its val/acc and val/loss.
    return {"fit_seconds": seconds, "samples_per_sec": steps * batch * epochs / seconds, "val_acc": val_acc,
            "val_loss": val_loss}  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
