"""What each of the template's speed choices buys: `python -m project fit` with one choice undone at a time.

    python -m benchmarks.levers [--rounds 3] [--epochs 50]

Rows: the default; AdamW's for-loop instead of the fused kernel (`--model.fused=false`); the progress bar redrawn
after every batch (a TQDMProgressBar of Lightning's default rate, 1); checkpoints written in the training thread
(`AtomicCheckpointIO`, without `BackgroundCheckpointIO`); the networks compiled (torch.compile, off by default).
Each is a fresh process in the same rounds, in alternating order; the fit phase is the run summary's
`wall_time_s`. Medians (min-max), and the median per-round ratio to the default.
"""

import argparse
import statistics
import tempfile
from pathlib import Path

from benchmarks.common import project_fit_seconds, rounds, spread

LEVERS = {
    "the default": ({}, []),
    "AdamW's for-loop (--model.fused=false)": ({}, ["--model.fused=false"]),
    "a redraw every batch (--trainer.callbacks+=TQDMProgressBar)": ({}, ["--trainer.callbacks+=TQDMProgressBar"]),
    "checkpoints in the training thread": ({}, ["--trainer.plugins=lightning_runs.checkpoints.AtomicCheckpointIO"]),
    "compiled (--compile.enabled=true), compilation included": ({}, ["--compile.enabled=true"]),
}


def fit_seconds(lever: str, epochs: int, work: Path) -> float:
    env, args = LEVERS[lever]
    work.mkdir(parents=True)
    return project_fit_seconds(work, f"--trainer.max_epochs={epochs}", *args, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=50)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="levers-"))
    results = {lever: [] for lever in LEVERS}
    for i, lever in enumerate(rounds(list(LEVERS), options.rounds)):
        results[lever].append(fit_seconds(lever, options.epochs, work / str(i)))
    default = results["the default"]
    print(f"\n{options.epochs} epochs, {options.rounds} rounds; fit phase (s), medians (min-max)\n")
    print("| | fit phase (s) | ratio to the default (per round) |\n|---|---|---|")
    for lever, seconds in results.items():
        ratios = [s / d for s, d in zip(seconds, default, strict=True)]
        print(f"| {lever} | {spread(seconds)} | {statistics.median(ratios):.2f} |")


if __name__ == "__main__":
    main()
