"""`make bench`: the project's fit against the same job as a plain PyTorch loop, in alternating pairs.

    python -m benchmarks.compare [--pairs 6] [--config configs/digits.yaml] [--startup 6]

Runs A (benchmarks/plain_loop.py) and B (`python -m project fit`) in pairs, a warm-up pair first, then
`--pairs` measured pairs in alternating order (A B, B A, A B, ...: on a machine that slows down under
sustained load, as shared and boosting CPUs do, a fixed order would bill the drift to the second of each
pair), and prints medians with min-max: the fit phase (training and the per-epoch validation and
checkpoint, without imports and set-up: the plain loop times its loop, the project's run summary times
on_fit_start to the end of fit), the whole process, their per-pair ratios, samples/s and peak memory. Then
the start-up: `python -m project --help` against `python -c "import lightning"`, alternated the same way.
Shared machines are noisy: the per-pair ratios are what count.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, alternating, newest_summary, plain_fit, project, resolve, spread, timed


def project_fit(configs: list[Path], work: Path) -> dict:
    wall, rss, _ = timed(project("fit", *[arg for config in configs for arg in ("--config", str(config))]), work)
    summary = newest_summary(work)
    return {"fit_seconds": summary["wall_time_s"], "samples_per_sec": summary["samples_per_sec"], "wall": wall,
            "rss": rss}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=6, help="an even number balances the order")
    parser.add_argument("--startup", type=int, default=6, help="pairs of start-up measurements (0 skips them)")
    parser.add_argument("--config", action="append", default=None, help="stacked configs (default digits.yaml)")
    options = parser.parse_args()
    configs = [ROOT / path for path in options.config or ["configs/digits.yaml"]]
    work = Path(tempfile.mkdtemp(prefix="bench-"))
    resolved = resolve(configs, work / "resolved.yaml")

    plain_fit(resolved, work), project_fit(configs, work)  # warm-up: file caches, compiled kernels
    pairs = alternating(options.pairs, lambda: plain_fit(resolved, work), lambda: project_fit(configs, work))
    rows = {  # name: (key, digits)
        "fit phase (s)": ("fit_seconds", 2),
        "whole process (s)": ("wall", 2),
        "samples/s": ("samples_per_sec", 0),
        "peak memory (MB)": ("rss", 0),
    }
    print(f"\n{options.pairs} pairs after a warm-up; medians (min-max)\n")
    print("| | plain PyTorch loop | python -m project fit | ratio (per pair) |\n|---|---|---|---|")
    results = {}
    for name, (key, digits) in rows.items():
        a, b = [x[key] for x, _ in pairs], [y[key] for _, y in pairs]
        ratio = spread([y / x for x, y in zip(a, b, strict=True)])
        print(f"| {name} | {spread(a, digits)} | {spread(b, digits)} | {ratio} |")
        results[name] = {"plain": a, "project": b}

    if options.startup:
        imports, help_ = [sys.executable, "-c", "import lightning"], project("--help")
        timed(imports, work), timed(help_, work)
        startup = alternating(options.startup, lambda: timed(imports, work)[0], lambda: timed(help_, work)[0])
        a, b = [x for x, _ in startup], [y for _, y in startup]
        ratio = spread([y / x for x, y in startup])
        print(f"| start-up (s): import lightning vs project --help | {spread(a)} | {spread(b)} | {ratio} |")
        results["startup (s)"] = {"import lightning": a, "project --help": b}
    (work / "bench.json").write_text(json.dumps(results, indent=2))
    print(f"\nraw numbers: {work / 'bench.json'}")


if __name__ == "__main__":
    main()
