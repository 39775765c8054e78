"""Images on disk: the template's ImageFolderDataModule against a plain torchvision ImageFolder script, on folders of
1x, 10x and 100x a base size, with 0 and 2 workers.

    python -m benchmarks.images [--base 1000] [--scales 1 10 100] [--workers 0 2] [--steps 200] [--rounds 2]

Writes the folders (32x32 RGB PNGs of 10 classes: a square of the class's colour on noise) under `--folder` (kept
for the next run, so a second run reads warm files as the first did), then fits each size and worker count with
each side (benchmarks/image_fit.py, one process each; the project's model with channels (8, 16)). Each round runs
every pair, alternating which side goes first, sizes forward then backward, so drift on this shared machine falls
on both sides alike. Medians (min-max) over the rounds; the template/plain ratio is taken per round.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torchvision.io import write_png

from benchmarks.common import spread, timed

CLASSES = 10


def write_images(root: Path, count: int, seed: int = 0, size: int = 32) -> Path:
    """root/class_<k>/<i>.png, `count` images in all; written once, reused while the count matches."""
    if root.exists() and sum(len(files) for _, _, files in os.walk(root)) == count:
        return root
    generator = torch.Generator().manual_seed(seed)
    colours = torch.randint(0, 256, (CLASSES, 3, 1, 1), generator=generator, dtype=torch.uint8)
    for k in range(CLASSES):
        (root / f"class_{k}").mkdir(parents=True, exist_ok=True)
    for first in range(0, count, 1000):
        n = min(1000, count - first)
        images = torch.randint(0, 256, (n, 3, size, size), generator=generator, dtype=torch.uint8)  # (n, 3, H, W)
        corners = torch.randint(0, size // 2, (n, 2), generator=generator)
        for i, (image, (y, x)) in enumerate(zip(images, corners.tolist(), strict=True)):
            k = (first + i) % CLASSES
            image[:, y : y + size // 2, x : x + size // 2] = colours[k]
            write_png(image, str(root / f"class_{k}" / f"{first + i:06d}.png"))
    return root


def fit(data: str, root: Path, workers: int, steps: int, work: Path) -> dict:
    command = [
        sys.executable,
        "-m",
        "benchmarks.image_fit",
        data,
        str(root),
        f"--workers={workers}",
        f"--steps={steps}",
    ]
    started = time.time()
    _, rss, out = timed(command, work)
    result = json.loads(out.strip().splitlines()[-1])
    return {**result, "first_step_s": result["first_step_at"] - started, "peak_rss_mb": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=1000)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "benchmark-images")
    options = parser.parse_args()
    sizes = [options.base * scale for scale in options.scales]
    for size in sizes:
        started = time.perf_counter()
        write_images(options.folder / f"{size}", size)
        print(f"{size:,} images: ready in {time.perf_counter() - started:.1f} s", flush=True)
    work = Path(tempfile.mkdtemp(prefix="images-"))
    cases = [(size, workers) for size in sizes for workers in options.workers]
    runs = {(size, workers, data): [] for size, workers in cases for data in ("template", "plain")}
    for r in range(options.rounds):
        for i, (size, workers) in enumerate(cases if r % 2 == 0 else cases[::-1]):
            for data in ("template", "plain") if (r + i) % 2 == 0 else ("plain", "template"):
                result = fit(data, options.folder / f"{size}", workers, options.steps, work)
                runs[size, workers, data].append(result)
                print(f"round {r}: {size:,} images, {workers} workers, {data}: {json.dumps(result)}", flush=True)
    print_tables(runs, cases, options)
    (work / "images.json").write_text(json.dumps({" ".join(map(str, key)): rows for key, rows in runs.items()}))


def print_tables(runs: dict, cases: list, options: argparse.Namespace) -> None:
    def column(size, workers, data, key, digits=0):
        return spread([r[key] for r in runs[size, workers, data]], digits)

    def ratio(size, workers, key):  # template / plain, per round: both ran one after the other
        pairs = zip(runs[size, workers, "template"], runs[size, workers, "plain"], strict=True)
        return spread([ours[key] / theirs[key] for ours, theirs in pairs])

    loads = [r["load"] for rows in runs.values() for r in rows]
    print(f"\n{options.rounds} rounds of {options.steps} measured steps (batch 64); medians (min-max); the machine's"
          f" load average during the fits {spread(loads, 1)}\n")  # fmt: skip
    print("| images | workers | samples/s: template | plain | template / plain | CPU us per sample: template | plain |"
          " template / plain | template vs the smallest |\n|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    first = {w: statistics.median(r["samples_per_sec"] for r in runs[cases[0][0], w, "template"]) for _, w in cases}
    for size, workers in cases:
        rate = statistics.median(r["samples_per_sec"] for r in runs[size, workers, "template"])
        cells = [f"{size:,}", str(workers)]
        for key in ("samples_per_sec", "cpu_us_per_sample"):
            cells += [column(size, workers, data, key) for data in ("template", "plain")]
            cells.append(ratio(size, workers, key))
        print(f"| {' | '.join([*cells, f'{rate / first[workers] - 1:+.1%}'])} |")
    print("\n| images | workers | first step (s): template | plain | peak RSS (MB): template | plain | peak PSS with"
          " workers (MB): template | plain |\n|---|---|---|---|---|---|---|---|")  # fmt: skip
    for size, workers in cases:
        cells = [f"{size:,}", str(workers)]
        for key, digits in (("first_step_s", 1), ("peak_rss_mb", 0), ("peak_pss_mb", 0)):
            cells += [column(size, workers, data, key, digits) for data in ("template", "plain")]
        print(f"| {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
