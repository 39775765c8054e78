"""`make bench-scale`: the same pipeline on 1x, 10x and 100x the digits (about 1.8k, 18k and 180k images).

    python benchmarks/scale.py [--copies 1 10 100] [--batches 300]

For each size: set-up time (building the data and its split and statistics, in this process), training
samples/s over `--batches` steps after a warm-up epoch (benchmarks/throughput.py, validation excluded), and the
fit process's peak memory. In-memory batches are sliced per step, so samples/s should not depend on the size.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.upscale import UpscaledDigits  # noqa: E402


def measure(copies: int, batches: int, work: Path) -> dict:
    started = time.perf_counter()
    datamodule = UpscaledDigits(copies=copies)
    datamodule.setup("fit")
    setup = time.perf_counter() - started
    size = sum(len(split[0]) for split in datamodule.splits.values())
    command = [
        sys.executable, "-m", "project", "fit", "--config", str(ROOT / "configs/digits.yaml"),
        "--data", "benchmarks.upscale.UpscaledDigits", f"--data.copies={copies}",
        "--trainer.max_epochs=2", f"--trainer.limit_train_batches={batches}", "--trainer.limit_val_batches=5",
        "--trainer.enable_progress_bar=false", "--trainer.callbacks+=benchmarks.throughput.Throughput",
        f"--trainer.logger.init_args.name=scale-{copies}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"fit on {copies} copies failed: {' '.join(command)}")
    throughput = json.loads(next(work.glob(f"runs/scale-{copies}/version_*/throughput.json")).read_text())
    return {
        "images": size,
        "setup_s": setup,
        "samples_per_s": throughput["samples_per_s"],
        "rss_mb": usage.ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--batches", type=int, default=300)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="scale-"))
    rows = [measure(copies, options.batches, work) for copies in options.copies]
    base = rows[0]
    print("\n| images | set-up (s) | samples/s | vs smallest | peak memory (MB) |\n|---|---|---|---|---|")
    for row in rows:
        change = row["samples_per_s"] / base["samples_per_s"] - 1
        cells = [f"{row['images']:,}", f"{row['setup_s']:.2f}", f"{row['samples_per_s']:.0f}", f"{change:+.1%}"]
        print(f"| {' | '.join(cells)} | {row['rss_mb']:.0f} |")
    (work / "scale.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
