"""Sweep workers on each storage: `python -m project sweep` started W times at once on one study of tiny trials.

    python -m benchmarks.sweep_workers [--workers 1 2 4] [--trials 4] [--rounds 1] [--storages journal sqlite]

For each storage (the journal file a study keeps by default, SQLite, and PostgreSQL where a server can start on this
machine: Debian's `postgresql` package, as the library's sweep tests start one) and each worker count: seconds from
the first worker's start to the last one's exit, and a check that the study holds exactly `--trials` finished trials.
A trial is 2 epochs of 5 batches of the default recipe, so the numbers are mostly start-up and storage, not training.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna

from benchmarks.common import ENV, ROOT, project

SWEEP = ROOT / "sweeps/digits.yaml"
STORAGES = ("journal", "sqlite", "postgresql")
TINY = "[--trainer.max_epochs=2,--trainer.limit_train_batches=5,--trainer.limit_val_batches=2]"
# The library's own test helper starts a throwaway server (initdb into a temporary folder, a free loopback port).
sys.path.insert(0, str(ROOT / "lightning-runs/tests"))


def storages(work: Path, names: list[str]):
    """(name, the worker's --storage option, the URL to read the study back with); PostgreSQL's only if it starts."""
    if "journal" in names:
        yield "journal", [], None
    if "sqlite" in names:
        yield "sqlite", ["--storage", f"sqlite:///{work}/bench.db"], f"sqlite:///{work}/bench.db"
    if "postgresql" not in names:
        return
    import postgres_server

    try:
        server = postgres_server.start()
    except postgres_server.Unavailable as reason:
        print(f"postgresql: skipped ({reason})", file=sys.stderr)
        return
    try:
        url = server.createdb(f"bench_{int(time.time() * 1000)}")
        yield "postgresql", ["--storage", url], url
    finally:
        server.stop()


def sweep_seconds(workers: int, trials: int, storage: list[str], work: Path) -> float:
    """Wall seconds of `workers` processes on one new study, started together; raises unless each exits 0."""
    study = f"bench{time.monotonic_ns()}"
    command = project("sweep", "--config", str(SWEEP), "--study", study, "--n_trials", str(trials))
    command += [
        "--configs",
        f"[{ROOT / 'configs/digits.yaml'}]",
        "--args",
        TINY,
        "--pruning_startup_trials",
        str(trials),
        "--threads",
        "1",
        *storage,
    ]
    started = time.perf_counter()
    procs = [
        subprocess.Popen(command, cwd=work, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(workers)
    ]
    errors = [p.communicate()[1].decode() for p in procs]
    seconds = time.perf_counter() - started
    failed = [e.strip().splitlines()[-1:] for p, e in zip(procs, errors, strict=True) if p.returncode != 0]
    if failed:
        raise RuntimeError(f"{workers} workers: {failed}")
    return seconds, study


def finished(study: str, url: str | None, work: Path) -> int:
    storage = url or optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(work / "runs/sweeps" / f"{study}.journal"))
    )
    states = [t.state for t in optuna.load_study(study_name=study, storage=storage).trials]
    return sum(s in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED) for s in states)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--storages", nargs="+", choices=STORAGES, default=list(STORAGES))
    options = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        work = Path(tmp)
        rows = {}
        for name, storage, url in storages(work, options.storages):
            for workers in options.workers:
                times = []
                for _ in range(options.rounds):
                    seconds, study = sweep_seconds(workers, options.trials, storage, work)
                    count = finished(study, url, work)
                    if count != options.trials:
                        raise RuntimeError(f"{name}, {workers} workers: {count} finished trials, not {options.trials}")
                    times.append(seconds)
                rows.setdefault(workers, {})[name] = statistics.median(times)
                print(f"{name:10} {workers} workers: {rows[workers][name]:.1f} s", file=sys.stderr)
    names = sorted({n for row in rows.values() for n in row}, key=STORAGES.index)
    print(f"| Workers | {' | '.join(names)} |\n| --- |{' --- |' * len(names)}")
    for workers, row in rows.items():
        print(f"| {workers} | {' | '.join(f'{row[n]:.1f}' for n in names if n in row)} |")


if __name__ == "__main__":
    main()
