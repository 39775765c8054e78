"""What each part of the default fit costs: `python -m project fit` against the same with one part switched off, and
the time inside each part's hooks.

    python -m benchmarks.parts [--rounds 4] [--epochs 50] [--only <row>] [--inside]

Rows: the library's parts (cli/parts.py, each `--<part> null`) and Lightning's own (the model summary, the progress
bar, TensorBoard swapped for CSV files or for the library's TensorBoardRunLogger, checkpoints written in the training
thread instead of the background one). Each round runs the default at both ends and every row between, the order
reversed every other round (drift on a machine that slows under load falls on all rows alike); a row's saving is its
round's default (the mean of the two) less its own time, per round: medians (min-max) of the fit phase (FitClock
below: setup to teardown, what every row has, as `--run_summary null` has no summary), its CPU seconds and the whole
process (output through pipes, as a CI log takes it). Then, from the default fits alone, the time inside each part's
hooks (`--inside`: only that): steadier than a difference of two whole fits where the machine is shared. The machine
is named with its load before and after: on a shared machine the numbers are indicative only.
"""

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from lightning.pytorch.callbacks import Callback

from benchmarks.common import DEFAULT, project, timed

PARTS = ("figures", "histograms", "gradient_check", "run_summary", "random_state", "checkpoint_on_signal",
         "best_checkpoint", "last_checkpoint", "early_stopping", "learning_rate_monitor")  # fmt: skip
ROWS = {f"{part} (--{part} null)": [f"--{part}=null"] for part in PARTS} | {
    "the model summary (--trainer.enable_model_summary false)": ["--trainer.enable_model_summary=false"],
    "the progress bar (--trainer.enable_progress_bar false)": ["--trainer.enable_progress_bar=false"],
    "TensorBoard (swapped for CSVRunLogger)": ["--trainer.logger=lightning_runs.loggers.CSVRunLogger"],
    # What the opt-in TensorBoardRunLogger saves over Lightning's default, which flushes every logged step.
    "TensorBoard's flush every step (swapped for TensorBoardRunLogger)": [
        "--trainer.logger=lightning_runs.loggers.TensorBoardRunLogger"
    ],
    "BackgroundCheckpointIO (checkpoints in the training thread)": [
        "--trainer.plugins=lightning_runs.checkpoints.AtomicCheckpointIO"
    ],
}
CLOCK = "--trainer.callbacks+=benchmarks.parts.FitClock"
KEYS = ("wall", "fit_seconds", "fit_cpu")
GIVEN: list[str] = []  # --with


class FitClock(Callback):
    """Prints `{"fit_seconds": ..., "fit_cpu": ..., "inside": ...}` as the fit's last line: wall and CPU seconds (all
    threads) from its setup, before every part's fit start, to its teardown, after every part's fit end; and for each
    part, [wall seconds, this thread's CPU seconds, calls] inside its hooks (a callback's `on_*`, a logger's writes, the
    checkpoint plugin's save). Switching a part off costs a whole fit's noise; the time inside it does not, though it
    misses what a part costs around its hooks (a thread of its own, memory). GradientCheck's includes its writes to the
    loggers, which the logger's row counts too."""

    def setup(self, trainer, pl_module, stage: str) -> None:
        self.inside: dict[str, list] = {}
        for callback in (c for c in trainer.callbacks if c is not self):
            for hook in (h for h in vars(Callback) if h.startswith("on_")):
                if getattr(type(callback), hook) is not getattr(Callback, hook):
                    self._clock(callback, hook, type(callback).__name__)
        for logger in trainer.loggers:
            for method in ("log_metrics", "log_hyperparams", "save", "finalize"):
                self._clock(logger, method, type(logger).__name__)
        self._clock(trainer.strategy.checkpoint_io, "save_checkpoint", type(trainer.strategy.checkpoint_io).__name__)
        self._started, self._cpu = time.perf_counter(), time.process_time()

    def _clock(self, owner, name: str, part: str) -> None:
        method, entry = getattr(owner, name), self.inside.setdefault(part, [0.0, 0.0, 0])

        def clocked(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                entry[0] += time.perf_counter() - wall
                entry[1] += time.thread_time() - cpu
                entry[2] += 1

        setattr(owner, name, clocked)  # on the instance: Lightning looks its hooks up by name

    def teardown(self, trainer, pl_module, stage: str) -> None:
        if trainer.is_global_zero and stage == "fit":
            cpu = time.process_time() - self._cpu  # all threads: steadier than wall time on a shared machine
            fit = {"fit_seconds": time.perf_counter() - self._started, "fit_cpu": cpu, "inside": self.inside}
            print(json.dumps(fit), flush=True)


def fit(work: Path, epochs: int | None, *args: str) -> dict:
    more = [f"--trainer.max_epochs={epochs}"] if epochs else []
    more += GIVEN
    wall, _, out = timed(project("fit", "--config", str(DEFAULT), *more, CLOCK, *args), work)
    clock = next(json.loads(line) for line in reversed(out.splitlines()) if line.startswith('{"fit_seconds"'))
    return {"wall": wall, **clock}


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or platform.machine())  # fmt: skip
    return f"{cpu}, {len(os.sched_getaffinity(0))} cores"


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def saved(default: list[dict], row: list[dict], key: str) -> list[float]:
    return [d[key] - r[key] for d, r in zip(default, row, strict=True)]


def main(args: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="an even number balances the order")
    parser.add_argument("--epochs", type=int, default=None, help="the default config's 50 unless given")
    parser.add_argument("--only", action="append", default=None, help="rows whose name contains this (repeatable)")
    parser.add_argument("--inside", action="store_true", help="no part switched off: the time inside each part only")
    parser.add_argument("--with", dest="given", action="append", default=[], help="an option every fit gets")
    options = parser.parse_args(args)
    GIVEN[:] = options.given
    only = options.only or [""]
    rows = {} if options.inside else {name: extra for name, extra in ROWS.items() if any(o in name for o in only)}
    work = Path(tempfile.mkdtemp(prefix="parts-"))
    before = load()
    if rows:  # a warm-up (file caches) before fits are compared; the time inside a part needs none
        fit(work, options.epochs)
    results: dict[str, list[dict]] = {"default": [], **{name: [] for name in rows}}
    default_fits: list[dict] = []
    for i in range(options.rounds):
        ends = [fit(work, options.epochs)]
        for name in list(rows)[:: 1 if i % 2 == 0 else -1]:  # forward, then backward, ...
            results[name].append(fit(work, options.epochs, *rows[name]))
        ends.append(fit(work, options.epochs))
        default_fits += ends
        results["default"].append({key: statistics.mean(end[key] for end in ends) for key in KEYS})

    default = results["default"]
    results["default fits"] = default_fits
    fit_s, wall_s = (statistics.median(d[key] for d in default) for key in ("fit_seconds", "wall"))
    print(f"\n{time.strftime('%Y-%m-%d')}, {machine()}; load average {before} before, {load()} after")
    print(f"{options.rounds} rounds, {options.epochs or 'the default'} epochs; the default fit: fit phase {fit_s:.2f}")
    saving = "; saved = the round's default less the row, medians (min-max)\n" if rows else "."
    print(f"s, whole process {wall_s:.2f} s{saving}")
    if rows:
        switched_off(rows, results, fit_s)
    inside(default_fits, fit_s)
    (work / "parts.json").write_text(json.dumps(results, indent=2))
    print(f"\nraw numbers: {work / 'parts.json'}")
    return results


def switched_off(rows: dict, results: dict, fit_s: float) -> None:
    default = results["default"]
    cpu_s = statistics.median(d["fit_cpu"] for d in default)
    print("| part switched off | fit phase saved (s) | % of the default's fit phase | fit phase CPU saved (s, %) "
          "| whole process saved (s) |\n|---|---|---|---|---|")  # fmt: skip
    for name in rows:
        fits, cpus, walls = (saved(default, results[name], key) for key in ("fit_seconds", "fit_cpu", "wall"))
        cpu = statistics.median(cpus)
        print(f"| {name} | {statistics.median(fits):.2f} ({min(fits):.2f} to {max(fits):.2f}) | "
              f"{100 * statistics.median(fits) / fit_s:.1f} | {cpu:.2f} ({100 * cpu / cpu_s:.1f}) | "
              f"{statistics.median(walls):.2f} |")  # fmt: skip


def inside(fits: list[dict], fit_s: float) -> None:
    """The time inside each part's hooks in the default fits: medians over them."""
    parts = sorted({part for fit in fits for part in fit["inside"]}, key=lambda p: -_median(fits, p, 0))
    print("\nInside each part's hooks in the default fits (medians): wall and this thread's CPU seconds, calls\n")
    print("| part | wall inside (s) | % of the fit phase | CPU inside (s) | calls |\n|---|---|---|---|---|")
    for part in parts:
        wall, cpu, calls = (_median(fits, part, i) for i in range(3))
        print(f"| {part} | {wall:.3f} | {100 * wall / fit_s:.1f} | {cpu:.3f} | {calls:.0f} |")


def _median(fits: list[dict], part: str, i: int) -> float:
    return statistics.median(fit["inside"].get(part, [0.0, 0.0, 0])[i] for fit in fits)


if __name__ == "__main__":
    main()
