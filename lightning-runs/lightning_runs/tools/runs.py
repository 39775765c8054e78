"""`python -m <package> runs [--name NAME]`: one line per run, newest first, from the summary.json every run keeps.

`best` is the score of the run's best checkpoint on the metric it monitors (named in the header when every run
monitors the same one, else in each cell), `test` the tests' scores of its own data; `differs` the settings of its
config (summary.json keeps it) that are not the same in every listed run; `(dirty)` after a commit: tracked files
differed from it. A `running` run whose fit process is gone from this machine is `killed`. A summary that cannot be
read is one line on stderr; every other run is still listed. Nothing here imports torch: it answers in a moment.
"""

import json
import sys
from pathlib import Path

from jsonargparse import auto_cli

from lightning_runs.configs import recipe
from lightning_runs.console import duration, program
from lightning_runs.processes import is_dead
from lightning_runs.run_folders import RUNS, VERSION, read_run_file

COLUMNS = ("run", "status", "epochs", "best", "test", "wall", "config", "commit", "differs")


def list_runs(name: str | None = None, root: Path = Path(RUNS)) -> list[dict[str, str]]:
    """Print the table of the runs under `root` and return its rows.

    Args:
        name: only the runs of this name (runs/<name>/version_N)
        root: where the runs are
    """
    found = []
    for path in sorted(Path(root).glob("*/*/summary.json")):
        if name is not None and path.parent.parent.name != name:
            continue
        try:
            summary = json.loads(read_run_file(path))
            if not isinstance(summary, dict):
                raise ValueError("not a JSON object")
            version = int(match[1]) if (match := VERSION.fullmatch(path.parent.name)) else -1
            found.append(((str(summary.get("started") or ""), version), summary, path.parent))
        except (OSError, ValueError, RecursionError) as error:  # one bad file never hides the others
            print(f"skipped {_shown(path)}: {type(error).__name__}: {_shown(error)}", file=sys.stderr)
    found.sort(key=lambda item: item[0], reverse=True)
    monitors = {_get(summary, "best_checkpoint", "monitor") for _, summary, _ in found} - {None}
    shared = monitors.pop() if len(monitors) == 1 else None
    rows = [_row(run, summary, shared) for _, summary, run in found]
    for row, differs in zip(rows, differences([summary.get("config") for _, summary, _ in found]), strict=True):
        row["differs"] = differs
    headers = {column: column for column in COLUMNS} | ({"best": f"best {shared}"} if shared else {})
    print(_table(rows, headers) if rows else f"no runs in {root}/" + (f" named {name}" if name else ""))
    return rows


def _get(summary: dict, *keys):
    for key in keys:
        summary = summary.get(key) if isinstance(summary, dict) else None
    return summary


def _row(run: Path, summary: dict, shared: str | None) -> dict[str, str]:
    status = str(summary.get("status", "-"))
    process = summary.get("process")
    if status == "running" and isinstance(process, dict) and is_dead(process):
        status = "killed"
    monitor = _get(summary, "best_checkpoint", "monitor")
    tests = {k: v for k, v in (summary.get("metrics") or {}).items() if str(k).startswith("test")}
    commit = str(_get(summary, "git", "commit") or "-")[:7] + (" (dirty)" if _get(summary, "git", "dirty") else "")
    return {
        "run": _shown(run),
        "status": _shown(status),
        "epochs": _shown(summary.get("epochs", "-")),
        "best": _score(_get(summary, "best_checkpoint", "score")) + (f" {monitor}" if monitor and not shared else ""),
        "test": " ".join(f"{_score(v)} {k}" for k, v in sorted(tests.items())[:2]) or "-",
        "wall": duration(summary.get("wall_time_s")) if summary.get("wall_time_s") is not None else "-",
        "config": _shown(summary.get("config_hash") or "-")[:8],
        "commit": _shown(commit),
    }


def differences(configs: list) -> list[str]:
    """For each run, its settings that are not the same in every listed run with a config, each by the shortest end of
    its name no other such setting shares (`lr=0.003 max_epochs=20`). Linear in the settings."""
    settings = [{k: _value(v) for k, v in recipe(c).items()} if isinstance(c, dict) else None for c in configs]
    known = [s for s in settings if s is not None]
    keys = dict.fromkeys(key for setting in known for key in setting)
    # A setting a run lacks (another DataModule's argument) counts as null there.
    differing = [key for key in keys if len({setting.get(key, "null") for setting in known}) > 1]
    ends: dict[str, int] = {}
    for key in differing:
        parts = key.split(".")
        for n in range(1, len(parts) + 1):
            ends[".".join(parts[-n:])] = ends.get(".".join(parts[-n:]), 0) + 1
    short = {key: next(e for n in range(1, len(key.split(".")) + 1) if ends[e := ".".join(key.split(".")[-n:])] == 1)
             for key in differing}  # fmt: skip
    return [
        " ".join(f"{short[k]}={s[k]}" for k in differing if k in s) or "-" if s is not None else "-" for s in settings
    ]


def _value(value) -> str:
    if isinstance(value, str) and "." in value and value.rpartition(".")[2][:1].isupper():
        value = value.rpartition(".")[2]  # a class path shows as its class's name
    return _shown(json.dumps(value) if not isinstance(value, str) else value).replace(" ", "")


def _score(value) -> str:
    return f"{value:.4f}" if isinstance(value, int | float) and value == value else "-"


def _shown(value) -> str:
    """Control characters escaped: a newline in a name would split the table's line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(value))


def _table(rows: list[dict[str, str]], headers: dict[str, str]) -> str:
    widths = {column: max(len(headers[column]), *(len(row[column]) for row in rows)) for column in COLUMNS}
    lines = [
        [headers[c].ljust(widths[c]) for c in COLUMNS],
        *([row[c].ljust(widths[c]) for c in COLUMNS] for row in rows),
    ]
    return "\n".join("  ".join(line).rstrip() for line in lines)


def main(cli_main, args: list[str] | None = None) -> list[dict[str, str]]:
    return auto_cli(list_runs, args=args, prog=f"{program()} runs")
