"""`python -m <package> runs [--name NAME]`: one line per run, newest first, from the summary.json every run keeps.

`best` is the score of the run's best checkpoint on the metric it monitors, `test` that metric's test counterpart
(`val/loss` -> `test/loss`) from the run's metrics: named in the header when every run monitors the same metric, else
in each cell. `differs`: the settings of its recipe (configs.py) that are not the same in every listed run; `(dirty)`
after a commit: tracked files differed from it; `env`: the uv.lock the environment was installed from (its hash), and
`(differs)` where installed releases were not the lock's. A `running` run whose fit process is gone from this machine is
`killed`. A summary that cannot be read, or whose fields have the wrong type (run_folders.read_summary), is one line
on stderr; every other run is still listed. Linear in the number and size of the summaries; nothing here imports torch.
"""

import json
import sys
from collections import Counter
from pathlib import Path

from jsonargparse import auto_cli

from lightning_runs.configs import recipe, test_metric
from lightning_runs.console import duration, program
from lightning_runs.processes import is_dead
from lightning_runs.run_folders import RUNS, VERSION, Unreadable, get, read_summary

COLUMNS = ("run", "status", "epochs", "best", "test", "wall", "config", "commit", "env", "differs")


def list_runs(name: str | None = None, root: Path = Path(RUNS)) -> list[dict[str, str]]:
    """Print the table of the runs under `root` and return its rows.

    Args:
        name: only the runs of this name (runs/<name>/version_N)
        root: where the runs are
    """
    found = []
    for path in sorted(Path(root).rglob("summary.json")):  # runs/<name>/version_N; sweeps' and cv's one deeper
        if name is not None and path.parent.parent.name != name:
            continue
        try:
            found.append(_read(path))
        except Exception as error:  # anything in one file is that file's: it never hides the other runs
            print(_shown(f"skipped {path}: {_reason(error)}"), file=sys.stderr)
    found.sort(key=lambda run: run[0], reverse=True)
    monitors = {monitor for _, _, monitor, _ in found} - {None}
    shared = monitors.pop() if len(monitors) == 1 else None  # one metric for all: named once, in the header
    rows = []
    for (_, row, monitor, _), differs in zip(found, differences([settings for *_, settings in found]), strict=True):
        if monitor is not None and shared is None:  # each score says its metric
            named = {"best": monitor, "test": _counterpart(monitor)}
            row |= {column: f"{row[column]} {metric}" for column, metric in named.items() if row[column] != "-"}
        rows.append({**row, "differs": differs})
    headers = dict(zip(COLUMNS, COLUMNS, strict=True))
    if shared is not None:
        headers |= {"best": f"best {shared}", "test": _counterpart(shared)}
    print(_table(rows, headers) if rows else f"no runs in {_shown(root)}/" + (f" named {_shown(name)}" if name else ""))
    return rows


def _read(path: Path) -> tuple:
    """(sort key, row, monitor, recipe settings shown) of one summary, or the error that makes it unreadable."""
    summary = read_summary(path)
    status, process = str(summary.get("status", "-")), summary.get("process")
    if status == "running" and process is not None and is_dead(process):
        status = "killed"
    monitor, test = get(summary, "best_checkpoint", "monitor"), None
    if monitor is not None:
        test = (summary.get("metrics") or {}).get(_counterpart(monitor))
    git, environment = summary.get("git") or {}, summary.get("environment") or {}
    row = {
        "run": str(path.parent),
        "status": status,
        "epochs": str(summary.get("epochs", "-")),
        "best": _score(get(summary, "best_checkpoint", "score")),
        "test": _score(test),
        "wall": "-" if summary.get("wall_time_s") is None else duration(summary["wall_time_s"]),
        "config": (summary.get("config_hash") or "-")[:8],
        "commit": (git.get("commit") or "-")[:7] + (" (dirty)" if git.get("dirty") else ""),
        "env": (environment.get("lock_sha256") or "-")[:7] + (" (differs)" if environment.get("differs") else ""),
    }
    settings = None if summary.get("config") is None else {k: _value(v) for k, v in recipe(summary["config"]).items()}
    # Start times have whole seconds: of two runs started in the same second, the higher version is newer.
    version = int(match[1]) if (match := VERSION.fullmatch(path.parent.name)) else -1
    return (summary.get("started") or "", version), row, monitor, settings


def differences(settings: list[dict[str, str] | None]) -> list[str]:
    """For each run, its settings that are not the same in every listed run with a config, each by the shortest end of
    its name no other such setting shares (`lr=0.003 max_epochs=20`). Linear in the settings."""
    known = [s for s in settings if s is not None]
    keys = dict.fromkeys(key for setting in known for key in setting)
    # A setting a run lacks (another DataModule's argument) counts as null there.
    differing = [key for key in keys if len({setting.get(key, "null") for setting in known}) > 1]
    ends = Counter(end for key in differing for end in _ends(key))
    short = {key: next((end for end in _ends(key) if ends[end] == 1), key) for key in differing}
    return ["-" if s is None else " ".join(f"{short[k]}={s[k]}" for k in differing if k in s) or "-" for s in settings]


def _ends(key: str) -> list[str]:
    """`model.network.lr` -> `lr`, `network.lr`, `model.network.lr`."""
    parts = key.split(".")
    return [".".join(parts[-n:]) for n in range(1, len(parts) + 1)]


def _counterpart(monitor: str) -> str:
    return test_metric(monitor) or "test"


def _value(value) -> str:
    if isinstance(value, str) and "." in value and value.rpartition(".")[2][:1].isupper():
        value = value.rpartition(".")[2]  # a class path shows as its class's name
    if type(value) in (int, float):  # most settings: as JSON writes them, without its encoder's cost
        return repr(value)
    return (value if isinstance(value, str) else json.dumps(value)).replace(" ", "")


def _score(value) -> str:
    """`0.9944`; a score that was not finite as RunSummary wrote it (`nan`); `-` where there is none."""
    return f"{value:.4f}" if isinstance(value, int | float) else value if isinstance(value, str) else "-"


def _reason(error: Exception) -> str:
    if isinstance(error, Unreadable):
        return error.problem
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) if isinstance(error, OSError | TypeError | ValueError) else f"{type(error).__name__}: {error}"


def _shown(value) -> str:
    """Control characters escaped: a newline or a terminal escape in a name would split or repaint the table."""
    text = str(value)
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _table(rows: list[dict[str, str]], headers: dict[str, str]) -> str:
    lines = [[_shown(headers[c]) for c in COLUMNS], *([_shown(row[c]) for c in COLUMNS] for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines)


def main(cli_main, args: list[str] | None = None) -> list[dict[str, str]]:
    return auto_cli(list_runs, args=args, prog=f"{program()} runs")
