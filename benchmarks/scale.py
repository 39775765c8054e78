"""`make bench-scale`: the same pipeline on 1x, 10x and 100x the digits (about 1.8k, 18k and 180k images).

    python -m benchmarks.scale [--copies 1 10 100] [--batches 300] [--rounds 2]

For each size: set-up time (building the data and its split and statistics, in this process), training
samples/s over at least `--batches` steps after a warm-up epoch (benchmarks/throughput.py, validation
excluded), and the fit process's peak memory. In-memory batches are sliced per step, so samples/s should
not depend on the size.
The sizes run in rounds, forward then backward (1 10 100 100 10 1 ...), so that a machine whose speed drifts
during the benchmark (shared CPUs, boost budgets) slows every size alike; the table shows medians (min-max).
"""

import argparse
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import DEFAULT, project, rounds, spread, timed
from benchmarks.upscale import UpscaledDigits


def measure(copies: int, batches: int, work: Path) -> dict:
    started = time.perf_counter()
    datamodule = UpscaledDigits(copies=copies)
    datamodule.setup("fit")
    setup = time.perf_counter() - started
    size = sum(len(split[0]) for split in datamodule.splits.values())
    # At least `batches` measured steps after the warm-up epoch, also when an epoch is shorter than that.
    per_epoch = math.ceil(len(datamodule.splits["train"][0]) / datamodule.hparams.batch_size)
    epochs = 1 + math.ceil(batches / per_epoch)
    work.mkdir(parents=True, exist_ok=True)
    command = project(
        "fit", "--config", str(DEFAULT), "--data", "benchmarks.upscale.UpscaledDigits", f"--data.copies={copies}",
        f"--trainer.max_epochs={epochs}", f"--trainer.limit_train_batches={batches}", "--trainer.limit_val_batches=5",
        "--trainer.enable_progress_bar=false", "--trainer.callbacks+=benchmarks.throughput.Throughput",
        f"--trainer.logger.init_args.name=scale-{copies}",
    )  # fmt: skip
    _, rss, _ = timed(command, work)
    throughput = json.loads(next(work.glob(f"runs/scale-{copies}/version_*/throughput.json")).read_text())
    return {
        "images": size,
        "setup_s": setup,
        "samples_per_sec": throughput["samples_per_sec"],
        "rss_mb": rss,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="scale-"))
    UpscaledDigits(copies=1).load()  # scikit-learn's import and its file cache, outside the first set-up time
    runs = {copies: [] for copies in options.copies}
    for i, copies in enumerate(rounds(options.copies, options.rounds)):
        runs[copies].append(measure(copies, options.batches, work / f"{i}"))
    rate = {copies: statistics.median(r["samples_per_sec"] for r in rows) for copies, rows in runs.items()}
    base = rate[options.copies[0]]
    print(f"\n{options.rounds} rounds; medians (min-max)\n")
    print("| images | set-up (s) | samples/s | vs smallest | peak memory (MB) |\n|---|---|---|---|---|")
    for copies, rows in runs.items():
        cells = [
            f"{rows[0]['images']:,}",
            spread([r["setup_s"] for r in rows], 2),
            spread([r["samples_per_sec"] for r in rows], 0),
            f"{rate[copies] / base - 1:+.1%}",
            spread([r["rss_mb"] for r in rows], 0),
        ]
        print(f"| {' | '.join(cells)} |")
    (work / "scale.json").write_text(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
