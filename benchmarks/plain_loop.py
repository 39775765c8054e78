"""The default config's job as a plain PyTorch loop, no framework: the baseline that `make bench` compares with.

    python benchmarks/plain_loop.py resolved.yaml      (resolved.yaml: `python -m project fit --print_config`)

Same split, normalization, network, AdamW groups, warmup + cosine per step, augmentation, epochs, batch size
and shuffling; it evaluates on the validation split and saves a checkpoint after every epoch, as the project
does. It reads every number from the resolved config, so it follows the recipe when the recipe changes. It
imports no Lightning: the whole-process comparison includes what importing a framework costs.
"""

import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import yaml
from sklearn.datasets import load_digits

from project.augment import random_affine
from project.networks import DigitsCNN
from project.schedule import warmup_cosine


def main(config_path: str) -> dict:
    config = yaml.safe_load(Path(config_path).read_text())
    model, data = config["model"], config["data"].get("init_args", config["data"])
    network = model["network"].get("init_args", {})
    seed = config["seed_everything"]
    random.seed(seed), np.random.seed(seed), torch.manual_seed(seed)

    digits = load_digits()
    images = torch.as_tensor(digits.images, dtype=torch.float32)  # (1797, 8, 8)
    labels = torch.as_tensor(digits.target)
    order = torch.randperm(len(images), generator=torch.Generator().manual_seed(data["seed"]))
    n_val, n_test = round(len(images) * data["val_fraction"]), round(len(images) * data["test_fraction"])
    val, train = order[:n_val], order[n_val + n_test :]
    mean, std = images[train].mean(), images[train].std()

    net = DigitsCNN(10, tuple(network.get("channels", (32, 64))), network.get("dropout", 0.1))
    decay = [p for p in net.parameters() if p.ndim >= 2]
    no_decay = [p for p in net.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": model["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
        lr=model["lr"],
    )
    batch, epochs = data["batch_size"], config["trainer"]["max_epochs"]
    steps = len(train) // batch  # the ragged last batch is dropped, as in the project
    total = steps * epochs
    scheduler = warmup_cosine(optimizer, total, round(model["warmup_fraction"] * total), model["min_lr"])
    checkpoint = Path(tempfile.mkdtemp()) / "last.pt"

    started = time.perf_counter()
    for epoch in range(epochs):
        net.train()
        shuffled = train[
            torch.randperm(len(train), generator=torch.Generator().manual_seed(data["seed"] * 100_003 + epoch))
        ]
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
    return {
        "fit_seconds": seconds,
        "samples_per_sec": steps * batch * epochs / seconds,
        "val_acc": val_acc,
        "val_loss": val_loss,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
