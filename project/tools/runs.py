"""`python -m project.tools.runs [--name NAME]` (or `make runs`): one line per run, newest first, from the
summary.json every run keeps, so that runs compare at a glance without opening TensorBoard."""

import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

from jsonargparse import auto_cli

from project.core.console import duration

COLUMNS = ("run", "status", "epochs", "best val/acc", "test/acc", "wall", "config", "commit")


def list_runs(name: str | None = None, root: Path = Path("runs")) -> list[dict[str, str]]:
    """Print the table of the runs under `root` and return its rows.

    Args:
        name: only the runs of this experiment: the logger's name, the folder above version_N (digits, mlp)
        root: where the runs are (the TensorBoardLogger's save_dir)
    """
    found = []
    for path in sorted(Path(root).rglob("summary.json")):
        if name is not None and name not in (path.parent.parent.name, str(path.parent.parent.relative_to(root))):
            continue
        summary = _read(path)
        if summary is not None:
            # Start times have whole seconds: of two runs started in the same second, the higher version is newer.
            version = int(match[1]) if (match := re.fullmatch(r"version_(\d+)", path.parent.name)) else -1
            found.append(((summary.get("started") or _modified(path), version), _row(path.parent, summary)))
    rows = [row for _, row in sorted(found, key=lambda item: item[0], reverse=True)]  # newest first
    if rows:
        print(_table(rows))
    else:
        print(f"no runs in {root}/" + (f" named {name}" if name else ""))
    return rows


def _read(path: Path) -> dict | None:
    """The summary, or None with a note on stderr: one broken file must not hide every other run."""
    try:
        summary = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        print(f"skipped {path}: not readable as JSON ({error})", file=sys.stderr)
        return None
    if not isinstance(summary, dict):
        print(f"skipped {path}: not a run summary", file=sys.stderr)
        return None
    return summary


def _row(run: Path, summary: dict) -> dict[str, str]:
    best = summary.get("best_checkpoint") or {}
    git = summary.get("git") or {}
    commit = (git.get("commit") or "-")[:7] + (" (dirty)" if git.get("dirty") else "")
    return {
        "run": str(run),
        "status": str(summary.get("status", "-")),
        "epochs": str(summary.get("epochs", "-")),
        "best val/acc": _score(best.get("score") if best.get("monitor") == "val/acc" else None),
        "test/acc": _score((summary.get("metrics") or {}).get("test/acc")),
        "wall": "-" if summary.get("wall_time_s") is None else duration(summary["wall_time_s"]),
        "config": (summary.get("config_hash") or "-")[:8],
        "commit": commit,
    }


def _score(value) -> str:
    return f"{value:.4f}" if isinstance(value, int | float) else "-"


def _modified(path: Path) -> str:
    """A summary without a start time (an evaluation of a loose checkpoint) sorts by when it was written."""
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")


def _table(rows: list[dict[str, str]]) -> str:
    widths = {column: max(len(column), *(len(row[column]) for row in rows)) for column in COLUMNS}
    lines = [[column.ljust(widths[column]) for column in COLUMNS]]
    lines += [[row[column].ljust(widths[column]) for column in COLUMNS] for row in rows]
    return "\n".join("  ".join(line).rstrip() for line in lines)


if __name__ == "__main__":
    auto_cli(list_runs)
