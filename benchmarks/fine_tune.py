"""Does starting from a run pay? A 10-class digits run fine-tuned into a 5-class one (`fit --init_from`) against the
same 5-class run from scratch, each with the project's recipe and nothing of the library edited.

    python -m benchmarks.fine_tune [--epochs 50] [--seed 0]

The digits are halved by a seeded permutation: the first half, all ten classes, trains the origin; the second
half's digits 0-4 (images the origin never saw) are the 5-class task, split by the DataModule as usual. It prints,
for scratch and fine-tuned, the first epoch whose val/acc reaches scratch's best, the best val/acc, and the test
accuracy of each run's best checkpoint, and appends them to runs/fine_tune.jsonl.
"""

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from project.data import DigitsDataModule

from benchmarks.common import project, timed


def val_acc_by_epoch(run: Path) -> list[float]:
    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()
    return [event.value for event in events.Scalars("val/acc")]


def main(args: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args(args)
    images, labels = DigitsDataModule().load()
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(options.seed))
    first, second = order[: len(order) // 2], order[len(order) // 2 :]
    second = second[labels[second] < 5]
    results = {}
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        np.savez(work / "ten.npz", samples=images[first].numpy(), labels=labels[first].numpy())
        np.savez(work / "five.npz", samples=images[second].numpy(), labels=labels[second].numpy())
        common = ["--data=project.data.FileDataModule", f"--trainer.max_epochs={options.epochs}", "--quiet"]
        common += ["--early_stopping=null", "--test_best=true", f"--seed_everything={options.seed}"]
        timed(project("fit", "--name=origin", *common, "--data.path=ten.npz"), work)
        five = [*common, "--data.path=five.npz"]
        for name, extra in {"scratch": [], "fine-tuned": ["--init_from=runs/origin/version_0"]}.items():
            seconds, _, _ = timed(project("fit", f"--name={name}", *five, *extra), work)
            run = work / "runs" / name / "version_0"
            summary = json.loads((run / "summary.json").read_text())
            results[name] = {"val_acc": val_acc_by_epoch(run), "test_acc": summary["metrics"]["test/acc"], "s": seconds}
    target = max(results["scratch"]["val_acc"])
    print(
        f"5-class task: {len(second)} unseen digits; origin: {len(first)} digits of 10 classes; {options.epochs} epochs"
    )
    print(f"{'':12}{'epoch >= scratch best':>22}{'best val/acc':>14}{'test/acc':>10}{'fit s':>8}")
    for name, result in results.items():
        reached = next((i + 1 for i, acc in enumerate(result["val_acc"]) if acc >= target), None)
        result |= {"epochs_to_scratch_best": reached, "best_val_acc": max(result["val_acc"])}
        cells = f"{reached or '-':>22}{result['best_val_acc']:>14.4f}{result['test_acc']:>10.4f}{result['s']:>8.1f}"
        print(f"{name:12}{cells}")
    with Path("runs/fine_tune.jsonl").open("a") as log:
        log.write(json.dumps({"options": vars(options), **results}) + "\n")
    return results


if __name__ == "__main__":
    main()
