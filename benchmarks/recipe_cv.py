"""Choose a recipe without the test splits: k-fold cross-validation inside train+val of seeds 0-4, plain PyTorch.

    python -m benchmarks.recipe_cv --epochs 30 --channels 64 128 [--batch_size 128] [--lr 0.02] [--rotation 0] ...

For each seed, the seed's own train+val (the project's split with that seed; the test split is never touched) is
cut into `--folds` folds; each fold is held out once while the rest trains, with the project's network, AdamW
groups, warmup + cosine schedule, augmentation and label smoothing. It prints the held-out errors over all seeds
and folds, the folds' mean accuracy and its standard deviation (8,085 digits for 5 seeds x 5 folds) and the median
fit time of one training, and appends both to
runs/recipe_cv.jsonl. The fit time is the training loop only (the same for every variant's share of start-up).
Every option defaults to the project's own recipe (the signatures and TRAINER_DEFAULTS).
"""

import argparse
import inspect
import json
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits

from lightning_runs.data.batches import ShardSampler, split_indices

from project.augment import random_affine
from project.cli import TRAINER_DEFAULTS
from project.data import ArrayDataModule
from project.model import DigitsClassifier
from project.networks import DigitsCNN
from project.schedule import decay_groups, warmup_cosine


def defaults(*classes) -> dict:
    return {
        k: p.default for c in classes for k, p in inspect.signature(c).parameters.items() if p.default is not p.empty
    }


RECIPE = defaults(DigitsCNN, DigitsClassifier, ArrayDataModule) | {"epochs": TRAINER_DEFAULTS["max_epochs"]}


def fit_and_count_errors(images, labels, train, held_out, options, seed: int) -> tuple[int, float]:
    torch.manual_seed(seed)
    mean, std = images[train].mean(), images[train].std()
    net = DigitsCNN(10, (8, 8), channels=tuple(options.channels), dropout=options.dropout)
    optimizer = torch.optim.AdamW(decay_groups(net, options.weight_decay), lr=options.lr, fused=options.fused)
    steps = len(train) // options.batch_size
    total = steps * options.epochs
    scheduler = warmup_cosine(optimizer, total, round(options.warmup_fraction * total), options.min_lr)
    sampler = ShardSampler(len(train), shuffle=True, seed=seed)
    started = time.perf_counter()
    for epoch in range(options.epochs):
        net.train()
        sampler.set_epoch(epoch)
        order = train[sampler.indices()]
        for step in range(steps):
            index = order[step * options.batch_size : (step + 1) * options.batch_size]
            x = random_affine(images[index], options.rotation, options.shift)
            logits = net(((x - mean) / std).unsqueeze(1))
            loss = F.cross_entropy(logits, labels[index], label_smoothing=options.label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
    seconds = time.perf_counter() - started
    net.eval()
    with torch.no_grad():
        predicted = net(((images[held_out] - mean) / std).unsqueeze(1)).argmax(-1)
    return int((predicted != labels[held_out]).sum()), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=RECIPE["epochs"])
    parser.add_argument("--channels", type=int, nargs=2, default=list(RECIPE["channels"]))
    parser.add_argument("--batch_size", type=int, default=RECIPE["batch_size"])
    parser.add_argument("--lr", type=float, default=RECIPE["lr"])
    parser.add_argument("--weight_decay", type=float, default=RECIPE["weight_decay"])
    parser.add_argument("--warmup_fraction", type=float, default=RECIPE["warmup_fraction"])
    parser.add_argument("--min_lr", type=float, default=RECIPE["min_lr"])
    parser.add_argument("--label_smoothing", type=float, default=RECIPE["label_smoothing"])
    parser.add_argument("--dropout", type=float, default=RECIPE["dropout"])
    parser.add_argument("--rotation", type=float, default=RECIPE["rotation"])
    parser.add_argument("--shift", type=float, default=RECIPE["shift"])
    parser.add_argument("--fused", action=argparse.BooleanOptionalAction, default=RECIPE["fused"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--name", default="")
    options = parser.parse_args()

    digits = load_digits()
    images = torch.as_tensor(digits.images, dtype=torch.float32)  # (1797, 8, 8)
    labels = torch.as_tensor(digits.target)
    errors, held, seconds, accuracies = 0, 0, [], []
    for seed in options.seeds:
        split = split_indices(len(images), RECIPE["val_fraction"], RECIPE["test_fraction"], seed)
        pool = torch.cat([split["train"], split["val"]])  # (1617,): never the test split
        folds = pool[torch.randperm(len(pool), generator=torch.Generator().manual_seed(seed))].chunk(options.folds)
        for k, held_out in enumerate(folds):
            train = torch.cat([f for j, f in enumerate(folds) if j != k])
            wrong, fit_seconds = fit_and_count_errors(images, labels, train, held_out, options, seed)
            errors, held = errors + wrong, held + len(held_out)
            accuracies.append(1 - wrong / len(held_out))
            seconds.append(fit_seconds)
    result = {"name": options.name, **{k: v for k, v in vars(options).items() if k != "name"}}
    result |= {"held_out": held, "errors": errors, "median_fit_s": round(statistics.median(seconds), 2)}
    # Per fold, as `python -m project cv` gives them: the mean and sample standard deviation of held-out accuracy.
    result |= {"fold_acc_mean": statistics.mean(accuracies), "fold_acc_std": statistics.stdev(accuracies)}
    print(json.dumps(result))
    Path("runs").mkdir(exist_ok=True)
    with Path("runs/recipe_cv.jsonl").open("a") as file:
        file.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
