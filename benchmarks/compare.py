"""`make bench`: the project's fit against the same job as a plain PyTorch loop and as a plain Lightning script.

    python -m benchmarks.compare [--rounds 6] [--config configs/digits.yaml] [--startup 6]

On the same resolved config, each round runs: the plain loop (benchmarks/plain_loop.py), the plain Lightning
script (benchmarks/plain_lightning.py), `python -m project fit`, the same compiled (`--compile.enabled true`), and
the seed chapter's first recipe as a plain loop (30 epochs, channels (32, 64), no augmentation or label smoothing,
torch's default AdamW: the yardstick of the recipe's wall time). A warm-up round first, then `--rounds` rounds in
alternating order (1 2 3 4, 4 3 2 1, ...: on a machine that slows down under sustained load, a fixed order would
bill the drift to the later ones). It prints medians with min-max of the fit phase (training with its per-epoch
validation and checkpoints, without imports and set-up), the whole process, samples/s and peak memory, the
compilation apart, and the per-round ratios the targets are stated in.
Then the start-up: `python -m project fit --help` and `runs` against `python -c "import lightning"`, alternated the
same way.
"""

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, newest_summary, plain_fit, project, resolve, rounds, spread, timed

# The seed chapter's recipe (docs/results.md): what the first template trained, in a plain loop.
SEED_CHAPTER = [
    "--trainer.max_epochs=30",
    "--model.network.init_args.channels=[32, 64]",
    "--data.rotation=0",
    "--data.shift=0",
    "--model.label_smoothing=0",
    "--model.fused=false",
]


# The compiled fit records each epoch's wall time too, validation included (benchmarks/throughput.py): the
# compilation in its first epoch is shown apart, as the first epoch's time less the median of the later epochs'.
COMPILED = ["--compile.enabled=true", "--trainer.callbacks+=benchmarks.throughput.Throughput"]


def project_fit(configs: list[Path], work: Path, *args: str) -> dict:
    stacked = [arg for config in configs for arg in ("--config", str(config))]
    wall, rss, _ = timed(project("fit", *stacked, *args), work)
    summary = newest_summary(work)
    result = {"fit_seconds": summary["wall_time_s"], "samples_per_sec": summary["samples_per_sec"], "wall": wall,
              "rss": rss}  # fmt: skip
    throughput = max(work.glob("runs/**/throughput.json"), key=lambda p: p.stat().st_mtime, default=None)
    if args and throughput is not None:
        first, *later = json.loads(throughput.read_text())["epoch_wall_seconds"]
        result["compile_seconds"] = first - statistics.median(later or [0.0])
    return result


def lightning_fit(resolved: Path, work: Path) -> dict:
    wall, rss, out = timed([sys.executable, "-m", "benchmarks.plain_lightning", str(resolved)], work)
    return {**json.loads(out.strip().splitlines()[-1]), "wall": wall, "rss": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="an even number balances the order")
    parser.add_argument("--startup", type=int, default=6, help="pairs of start-up measurements (0 skips them)")
    parser.add_argument("--config", action="append", default=None, help="stacked configs (default digits.yaml)")
    options = parser.parse_args()
    configs = [ROOT / path for path in options.config or ["configs/digits.yaml"]]
    work = Path(tempfile.mkdtemp(prefix="bench-"))
    resolved = resolve(configs, work / "resolved.yaml")
    seed_chapter = resolve(configs, work / "seed_chapter.yaml", *SEED_CHAPTER)
    runs = {
        "plain PyTorch loop": lambda: plain_fit(resolved, work),
        "plain Lightning script": lambda: lightning_fit(resolved, work),
        "python -m project fit": lambda: project_fit(configs, work),
        "project fit, compiled": lambda: project_fit(configs, work, *COMPILED),
        "seed chapter, plain loop": lambda: plain_fit(seed_chapter, work),
    }
    for run in runs.values():  # warm-up: file caches, compiled kernels
        run()
    results = {name: [] for name in runs}
    for name in rounds(list(runs), options.rounds):
        results[name].append(runs[name]())

    print(f"\n{time.strftime('%Y-%m-%d')}, {platform.machine()}, {_cores()} cores; {options.rounds} rounds after a")
    print("warm-up; medians (min-max)\n")
    print("| | " + " | ".join(runs) + " |")
    print("|---" * (len(runs) + 1) + "|")
    rows = {"fit phase (s)": ("fit_seconds", 2), "whole process (s)": ("wall", 2),
            "samples/s": ("samples_per_sec", 0), "peak memory (MB)": ("rss", 0)}  # fmt: skip
    rows["compilation in the first epoch (s)"] = ("compile_seconds", 1)
    for row, (key, digits) in rows.items():
        cells = (spread([r[key] for r in results[name]], digits) if key in results[name][0] else "-" for name in runs)
        print(f"| {row} | " + " | ".join(cells) + " |")

    project_runs = results["python -m project fit"]

    def ratio(baseline: str, key: str) -> str:  # per round: the i-th run of each, measured close together
        return spread([p[key] / b[key] for p, b in zip(project_runs, results[baseline], strict=True)])

    print("\n| target | ratio (per round) |\n|---|---|")
    print(f"| project / plain Lightning, whole process (<= 1.00) | {ratio('plain Lightning script', 'wall')} |")
    print(f"| project / plain Lightning, fit phase | {ratio('plain Lightning script', 'fit_seconds')} |")
    print(f"| project / plain loop, fit phase (<= 1.15) | {ratio('plain PyTorch loop', 'fit_seconds')} |")
    print(f"| project / plain loop, whole process (<= 1.30) | {ratio('plain PyTorch loop', 'wall')} |")
    print(
        f"| project / seed chapter's plain loop, whole process (<= 2) | {ratio('seed chapter, plain loop', 'wall')} |"
    )
    compiled = spread([c["fit_seconds"] / p["fit_seconds"] for c, p in zip(results["project fit, compiled"],
                                                                          project_runs, strict=True)])  # fmt: skip
    print(f"| compiled / eager project fit, fit phase (off by default where > 1) | {compiled} |")

    if options.startup:  # issue 52: each within 0.3 s of `import lightning`
        commands = {"import lightning": [sys.executable, "-c", "import lightning"],
                    "fit --help": project("fit", "--help"), "runs": project("runs")}  # fmt: skip
        for command in commands.values():
            timed(command, work)
        startup: dict[str, list[float]] = {name: [] for name in commands}
        for name in rounds(list(startup), options.startup):
            startup[name].append(timed(commands[name], work)[0])
        base = startup["import lightning"]
        for name in ("fit --help", "runs"):
            print(f"| start-up (s): {name} {spread(startup[name])} vs import lightning {spread(base)}, difference | "
                  f"{spread([y - x for x, y in zip(base, startup[name], strict=True)])} |")  # fmt: skip
        results["startup (s)"] = startup
    (work / "bench.json").write_text(json.dumps(results, indent=2))
    print(f"\nraw numbers: {work / 'bench.json'}")


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    main()
