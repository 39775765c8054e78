"""Where the gap to the plain loop comes from: the same job at four levels of framework, alternated in rounds.

    python -m benchmarks.floor [--epochs 20] [--rounds 3]

1. plain: benchmarks/plain_loop.py, no framework;
2. bare Lightning: a Trainer with no logger, no checkpoints, no callbacks, on the project's own
   LightningModule and DataModule (so also without per-step logging to any file);
3. Lightning's defaults: TensorBoard logging every step and a checkpoint every epoch, no other callback;
4. the project: `python -m project fit`, every feature on.
Each row is the fit phase (seconds) of one process; medians (min-max) over the rounds, and the median ratio to
the plain loop in the same round.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import DEFAULT, ENV, plain_fit, project_fit_seconds, resolve, rounds, spread

LEVELS = ("plain", "bare Lightning", "Lightning's defaults", "the project")


def lightning_fit(resolved: Path, level: str, work: Path) -> float:
    """In this (fresh) process: the resolved config's model and data under a Trainer at `level`."""
    import lightning as L
    import yaml
    from jsonargparse import ArgumentParser

    from project.data import ArrayDataModule
    from project.model import DigitsClassifier

    config = yaml.safe_load(resolved.read_text())
    parser = ArgumentParser()
    parser.add_class_arguments(DigitsClassifier, "model")
    parser.add_subclass_arguments(ArrayDataModule, "data")
    objects = parser.instantiate_classes(parser.parse_object({"model": config["model"], "data": config["data"]}))
    L.seed_everything(config["seed_everything"], verbose=False)
    trainer = config["trainer"]
    options = {"max_epochs": trainer["max_epochs"], "accelerator": "cpu", "devices": 1, "enable_progress_bar": False,
               "enable_model_summary": False, "log_every_n_steps": 1, "default_root_dir": str(work)}  # fmt: skip
    if level == "bare Lightning":
        options |= {"logger": False, "enable_checkpointing": False, "callbacks": []}
    started = time.perf_counter()
    L.Trainer(**options).fit(objects.model, objects.data)
    return time.perf_counter() - started


def measure(level: str, resolved: Path, epochs: int, work: Path) -> float:
    work.mkdir(parents=True)
    if level == "plain":
        return plain_fit(resolved, work)["fit_seconds"]
    if level == "the project":
        return project_fit_seconds(work, "--quiet", f"--trainer.max_epochs={epochs}")
    command = [
        sys.executable,
        "-m",
        "benchmarks.floor",
        "--level",
        level,
        "--resolved",
        str(resolved),
        "--work",
        str(work),
    ]
    out = subprocess.run(command, env=ENV, capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--level", help=argparse.SUPPRESS)  # internal: one Lightning fit in a fresh process
    parser.add_argument("--resolved", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.level:
        return print(lightning_fit(options.resolved, options.level, options.work))
    work = Path(tempfile.mkdtemp(prefix="floor-"))
    resolved = resolve([DEFAULT], work / "resolved.yaml", f"--trainer.max_epochs={options.epochs}")
    seconds = {level: [] for level in LEVELS}
    for i, level in enumerate(rounds(list(LEVELS), options.rounds)):
        seconds[level].append(measure(level, resolved, options.epochs, work / f"{i}"))
    print(f"\n{options.epochs} epochs, {options.rounds} rounds; fit phase, medians (min-max)\n")
    print("| | fit phase (s) | vs plain (per round) |\n|---|---|---|")
    for level, values in seconds.items():
        ratio = statistics.median(v / p for v, p in zip(values, seconds["plain"], strict=True))
        print(f"| {level} | {spread(values)} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
