"""`make bench`: the project's fit against the same job as a plain PyTorch loop, in alternating pairs.

    python benchmarks/compare.py [--pairs 6] [--config configs/digits.yaml] [--startup 6]

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
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and stdout of one process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(command)} failed")
    return seconds, usage.ru_maxrss / 1024, out


def plain(resolved: Path, work: Path) -> dict:
    wall, rss, out = timed([sys.executable, str(ROOT / "benchmarks/plain_loop.py"), str(resolved)], work)
    result = json.loads(out.strip().splitlines()[-1])
    return {"wall": wall, "fit": result["fit_seconds"], "samples_per_sec": result["samples_per_sec"], "rss": rss}


def project(config: list[str], work: Path) -> dict:
    wall, rss, _ = timed(
        [
            sys.executable,
            "-m",
            "project",
            "fit",
            *config,
        ],
        work,
    )
    summary = json.loads(max(work.glob("runs/digits/version_*/summary.json"), key=os.path.getmtime).read_text())
    return {"wall": wall, "fit": summary["wall_time_s"], "samples_per_sec": summary["samples_per_sec"], "rss": rss}


def alternating(n: int, a, b) -> list[tuple]:
    """n pairs (a(), b()), run in the order a b, b a, a b, ...: drift over time falls on both sides alike."""
    pairs = []
    for i in range(n):
        if i % 2:
            second = b()
            pairs.append((a(), second))
        else:
            first = a()
            pairs.append((first, b()))
    return pairs


def spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=6, help="an even number balances the order")
    parser.add_argument("--startup", type=int, default=6, help="pairs of start-up measurements (0 skips them)")
    parser.add_argument("--config", action="append", default=None, help="stacked configs (default digits.yaml)")
    options = parser.parse_args()
    config = [arg for path in options.config or ["configs/digits.yaml"] for arg in ("--config", str(ROOT / path))]
    work = Path(tempfile.mkdtemp(prefix="bench-"))
    resolved = work / "resolved.yaml"
    resolved.write_text(timed([sys.executable, "-m", "project", "fit", *config, "--print_config"], work)[2])

    plain(resolved, work), project(config, work)  # warm-up: file caches, compiled kernels
    pairs = alternating(options.pairs, lambda: plain(resolved, work), lambda: project(config, work))
    rows = {
        "fit phase (s)": ([a["fit"] for a, _ in pairs], [b["fit"] for _, b in pairs]),
        "whole process (s)": ([a["wall"] for a, _ in pairs], [b["wall"] for _, b in pairs]),
        "samples/s": ([a["samples_per_sec"] for a, _ in pairs], [b["samples_per_sec"] for _, b in pairs]),
        "peak memory (MB)": ([a["rss"] for a, _ in pairs], [b["rss"] for _, b in pairs]),
    }
    print(f"\n{options.pairs} pairs after a warm-up; medians (min-max)\n")
    print("| | plain PyTorch loop | python -m project fit | ratio (per pair) |\n|---|---|---|---|")
    for name, (a, b) in rows.items():
        ratio = spread([y / x for x, y in zip(a, b, strict=True)])
        print(f"| {name} | {spread(a, 0 if 'MB' in name or 'samples' in name else 2)} | "
              f"{spread(b, 0 if 'MB' in name or 'samples' in name else 2)} | {ratio} |")  # fmt: skip
    results = {name: {"plain": a, "project": b} for name, (a, b) in rows.items()}

    if options.startup:
        imports = [sys.executable, "-c", "import lightning"]
        help_ = [sys.executable, "-m", "project", "--help"]
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
