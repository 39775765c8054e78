"""What the tools that start fits share (sweep, cv): the recipe as `fit` resolves it, a study's name and recipe
checked, and the fits started as `python -m <package> fit ...` processes behind a launcher (such as torchrun)."""

import contextlib
import io
import os
import shlex
import statistics
import sys
from collections.abc import Callable

import yaml

from lightning_runs.configs import differences
from lightning_runs.console import program
from lightning_runs.errors import UsageError
from lightning_runs.run_folders import check_folder_name
from lightning_runs.tools.children import run_processes, stop_signal

STATISTICS = dict(mean=statistics.mean, median=statistics.median, std=lambda v: statistics.stdev(v) if v[1:] else 0.0)


def fit_config(cli_main: Callable, recipe: tuple[str, ...]) -> dict:
    """The fit's config as the CLI resolves it, the run's name included (`fit --print_config` prints it and exits
    before anything is built); a bad config or option is refused as the fit would refuse it."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            cli_main(["fit", *recipe, "--print_config"])
    except SystemExit as exit:
        if exit.code not in (0, None):  # a bad config or option: its error is already on stderr
            raise
    return yaml.safe_load(printed.getvalue()) or {}


def check_study(study: str, folds: int | None, resolved: dict) -> None:
    """The study's name becomes a file's and a folder's; folds need at least 2 and a DataModule that takes them."""
    check_folder_name("--study", study)
    if folds is not None and folds < 2:
        raise UsageError(f"--folds {folds}: cross-validation takes at least 2 folds")
    data = resolved.get("data") or {}
    if folds is not None and not {"folds", "fold"} <= set(data.get("init_args") or {}):
        raise UsageError(
            f"--data {data.get('class_path')}: takes no folds and fold arguments; give its __init__ `folds: int | None"
            " = None, fold: int = 0` and validate on fold `fold` of `folds` (python -m pydoc"
            " lightning_runs.data.fold_indices)"
        )


def same_recipe(began: dict | None, folds: int | None, recipe: dict, where: str) -> dict:
    """The study's record of its recipe and folds; a continuation with others would compare scores of two recipes, or
    mix two splits: refused before any fit, naming what differs."""
    changed = [] if began is None or began.get("folds") == folds else [f"--folds {folds} (the study: {began['folds']})"]
    changed += [] if began is None else differences(began.get("recipe") or {}, recipe, "the study")
    if changed:
        raise UsageError(
            f"{'; '.join(changed[:4])}{f'; {len(changed) - 4} more' if len(changed) > 4 else ''}: {where} began with"
            " another recipe; give another --study for this one, or the study's to continue it"
        )
    return {"folds": folds, "recipe": recipe}


class Fits:
    """`fit` commands as processes of `python -m <package>` (the package of `cli_main`; a project run as a script,
    `python train.py`, is started that way) behind `launcher`, each with OMP_NUM_THREADS `threads` if given."""

    def __init__(self, cli_main: Callable, launcher: tuple[str, ...] = (), threads: int | None = None) -> None:
        package = cli_main.__module__.partition(".")[0]
        self.python = [sys.executable, "-m", package] if package != "__main__" else [sys.executable, sys.argv[0]]
        self.launcher = list(launcher)
        self.env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}

    def shown(self, command: list[str]) -> str:
        return shlex.join([*self.launcher, *program().split(), *command])

    def run(self, commands: list[list[str]], workers: int = 1, logs=None, ended=None) -> tuple[list, int | None]:
        """Their exit codes, and the stop signal (SIGTERM, SIGINT) received or reported by a fit's exit code."""
        started = [[*self.launcher, *self.python, *command] for command in commands]
        codes, received = run_processes(started, self.env, workers, logs, ended)
        return codes, received or next(filter(None, map(stop_signal, codes)), None)


def table(rows: list[dict], columns: list[str], stats: tuple[str, ...]) -> dict:
    """`rows` printed as a table of `columns` (the first names each row), then `stats` of each column that every row
    gives a number: those, by column."""
    numbers = {c: [row[c] for row in rows if isinstance(row.get(c), int | float)] for c in columns[1:]}
    summary = {c: {s: STATISTICS[s](v) for s in stats} for c, v in numbers.items() if len(v) == len(rows)}
    print(" | ".join(columns))
    for row in [*rows, *({columns[0]: s, **{c: summary[c][s] for c in summary}} for s in stats)]:
        print(" | ".join(_cell(row.get(c)) for c in columns))
    return summary


def _cell(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else "-" if value is None else str(value)
