"""What the benchmark scripts share: running a process with the project importable, timing it, reading its run,
alternating the order of what is compared, and printing medians with their range."""

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The repository importable in every child (`benchmarks.throughput`, `project` from a copy without install).
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
DEFAULT = ROOT / "configs/digits.yaml"


def project(*args: str) -> list[str]:
    return [sys.executable, "-m", "project", *args]


def timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and stdout of one process; raises if it fails. Both its stdout and its stderr go
    through a pipe, as a CI log or a scheduler's log file takes them: a progress bar's redraws cost there what they
    cost a user (to /dev/null they cost nothing)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.append(process.stderr.read()))  # both pipes drained: no deadlock
    reader.start()
    out = process.stdout.read()
    reader.join()
    _, status, usage = os.wait4(process.pid, 0)  # not communicate(): its wait() would take the rusage with it
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed:\n{''.join(err)[-2000:]}")
    return seconds, usage.ru_maxrss / 1024, out


def resolve(configs: list[Path], path: Path, *overrides: str) -> Path:
    """The fully resolved config (`fit --print_config`) written to `path`: what benchmarks/plain_loop.py reads."""
    stacked = [arg for config in configs for arg in ("--config", str(config))]
    path.write_text(timed(project("fit", *stacked, *overrides, "--print_config"), path.parent)[2])
    return path


def plain_fit(resolved: Path, work: Path) -> dict:
    """benchmarks/plain_loop.py on a resolved config: its fit seconds and samples/s, and the process's wall and RSS."""
    wall, rss, out = timed([sys.executable, "-m", "benchmarks.plain_loop", str(resolved)], work)
    return {**json.loads(out.strip().splitlines()[-1]), "wall": wall, "rss": rss}


def project_fit_seconds(work: Path, *args: str, env: dict[str, str] | None = None) -> float:
    """`python -m project fit --config configs/digits.yaml <args>` in `work`: its fit phase (summary wall_time_s)."""
    command = project("fit", "--config", str(DEFAULT), *args)
    subprocess.run(command, cwd=work, env={**ENV, **(env or {})}, capture_output=True, check=True)
    return newest_summary(work)["wall_time_s"]


def newest_summary(work: Path) -> dict:
    """summary.json of the run written last under `work`/runs (the fit's own wall_time_s, samples_per_sec, ...)."""
    return json.loads(max(work.glob("runs/**/summary.json"), key=os.path.getmtime).read_text())


def alternating(n: int, a: Callable, b: Callable) -> list[tuple]:
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


def rounds(items: list, n: int) -> list:
    """`items` n times, forward then backward (1 2 3 3 2 1 ...), for the same reason as `alternating`."""
    return [item for i in range(n) for item in (items if i % 2 == 0 else items[::-1])]


def spread(values: list[float], digits: int = 2) -> str:
    """Median (min-max)."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"
