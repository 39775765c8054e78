"""What the pictures cost: fit time and event-file size of the default run with figures and histograms on
(their defaults) against the same run with both off. Runs alternate (on, off, off, on, ...) so that drift in
machine load falls on both sides; the fit time is `wall_time_s` from summary.json (no interpreter start-up).

    python -m benchmarks.logging_cost --pairs 3
    python -m benchmarks.logging_cost --profile   # one run: each observability callback's share of fit time

On a shared machine the A/B fit times swing by more than the cost being measured; `--profile` is immune to
that: Lightning's SimpleProfiler times every callback hook inside the same run as the fit it is compared with.
"""

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from benchmarks.common import DEFAULT, alternating, project, timed

OFF = ["--figures.every_n_epochs=0", "--histograms.every_n_epochs=0"]


def fit(save_dir: Path, extra: list[str]) -> dict:
    logged_to = f"--trainer.logger.init_args.save_dir={save_dir}"
    timed(project("fit", "--config", str(DEFAULT), "--quiet", logged_to, *extra), save_dir.parent)
    (run_dir,) = (save_dir / "digits").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    events = sum(p.stat().st_size for p in run_dir.glob("events.out.tfevents.*"))
    return {"seconds": summary["wall_time_s"], "epochs": summary["epochs"], "event_bytes": events}


def profile() -> None:
    from project.cli import cli_main  # imported here: the A/B runs need no Lightning in this process

    with tempfile.TemporaryDirectory() as tmp:
        args = ["fit", "--config", str(DEFAULT), "--quiet", "--trainer.profiler=simple"]
        cli = cli_main([*args, f"--trainer.logger.init_args.save_dir={tmp}"])
        (run_dir,) = (Path(tmp) / "digits").iterdir()
        fit_seconds = json.loads((run_dir / "summary.json").read_text())["wall_time_s"]
    durations = cli.trainer.profiler.recorded_durations  # "[Callback]Figures.on_fit_end" -> [seconds, ...]
    print(f"fit: {fit_seconds:.1f} s, {cli.trainer.current_epoch} epochs, {cli.trainer.global_step} steps")
    for name in ("Figures", "Histograms", "GradNormMonitor", "SampleRateMonitor", "RunSummary"):
        seconds = sum(sum(d) for action, d in durations.items() if action.startswith(f"[Callback]{name}."))
        print(f"{name:>18}: {seconds:6.2f} s = {100 * seconds / fit_seconds:5.2f}% of fit time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    options = parser.parse_args()
    if options.profile:
        return profile()
    with tempfile.TemporaryDirectory() as tmp:

        def run(setting: str) -> dict:
            result = fit(Path(tempfile.mkdtemp(prefix=f"{setting}-", dir=tmp)), [] if setting == "on" else OFF)
            print(f"{setting:>3}: {result}", flush=True)
            return result

        pairs = alternating(options.pairs, lambda: run("on"), lambda: run("off"))
    results = {"on": [a for a, _ in pairs], "off": [b for _, b in pairs]}
    on, off = (statistics.median(r["seconds"] for r in results[s]) for s in ("on", "off"))
    print(f"median fit time: on {on:.1f} s, off {off:.1f} s, overhead {100 * (on / off - 1):+.1f}%")
    ratios = [a["seconds"] / b["seconds"] for a, b in zip(results["on"], results["off"], strict=True)]
    print(f"median of the per-pair ratios: {100 * (statistics.median(ratios) - 1):+.1f}%")
    for setting in ("on", "off"):
        print(f"event files, {setting}: {statistics.median(r['event_bytes'] for r in results[setting]) / 1e3:.0f} KB")
    assert len({r["epochs"] for r in results["on"] + results["off"]}) == 1, "both settings must train the same epochs"


if __name__ == "__main__":
    main()
