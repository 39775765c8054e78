"""`python -m <package> runs [--name NAME]`: one line per run, newest first, from the
summary.json every run keeps, so that runs compare at a glance without opening TensorBoard.

`best` is the score of the run's best checkpoint on the metric it monitors, `test` that metric's test counterpart
(`val/f1` -> `test/f1`) from the run's metrics. When every listed run monitors the same metric the header names it
(`best val/f1`, `test/f1`); otherwise each cell does (`0.9944 val/f1`). `differs` shows each run's values of the
settings (its config.yaml, as summary.json keeps it) that are not the same in every listed run: `max_epochs=20
lr=0.003`. `(dirty)` after a commit: tracked files differed from it as the run started (provenance.py). A run
`running` whose fit process, as summary.json records it, is gone from this machine is `killed` (kill -9, the machine's
memory): it could not say so itself; another machine's run is shown as its summary says."""

import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

from jsonargparse import auto_cli

from lightning_runs.console import duration, program
from lightning_runs.contract.names import counterpart
from lightning_runs.folders.layout import RUNS, read_run_file
from lightning_runs.folders.recipes import flatten
from lightning_runs.processes import is_dead

COLUMNS = ("run", "status", "epochs", "best", "test", "wall", "config", "commit", "differs")
# Config keys that differ between runs without telling them apart: where the run was put (the run column shows it),
# how the command was shown or started.
UNCOMPARED = {"ckpt_path", "quiet", "test_best", "trainer.logger.init_args.version", "trainer.logger.init_args.name"}
UNCOMPARED |= {"trainer.enable_progress_bar", "trainer.enable_model_summary"}
# The fields the table reads and the types it can show (None: not recorded); a hand-edited file with another type
# is skipped with a note, and the other runs are still listed.
NUMBER = (int, float, type(None))
TEXT = (str, type(None))
FIELDS = {
    "started": TEXT,
    "best_checkpoint": (dict, type(None)),
    "best_checkpoint.monitor": TEXT,
    "best_checkpoint.score": NUMBER,
    "metrics": (dict, type(None)),
    "git": (dict, type(None)),
    "git.commit": TEXT,
    "wall_time_s": NUMBER,
    "config_hash": TEXT,
    "config": (dict, type(None)),
    "process": (dict, type(None)),
}


def list_runs(name: str | None = None, root: Path = Path(RUNS)) -> list[dict[str, str]]:
    """Print the table of the runs under `root` and return its rows.

    Args:
        name: only the runs of this experiment: the logger's name, the folder above version_N (`runs/<name>/version_N`)
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
            monitor = (summary.get("best_checkpoint") or {}).get("monitor")
            found.append(((summary.get("started") or _modified(path), version), monitor, summary, path.parent))
    found.sort(key=lambda item: item[0], reverse=True)  # newest first
    monitors = {monitor for _, monitor, _, _ in found if monitor}
    shared = monitors.pop() if len(monitors) == 1 else None  # one metric for all: named once, in the header
    rows = [_row(run, summary, monitor or shared, named=shared is None) for _, monitor, summary, run in found]
    for row, shown in zip(rows, differences([summary for _, _, summary, _ in found]), strict=True):
        row["differs"] = shown
    if rows:
        print(_table(rows, _headers(shared)))
    else:
        print(f"no runs in {root}/" + (f" named {name}" if name else ""))
    return rows


def _read(path: Path) -> dict | None:
    """The summary, or None with a note on stderr: one broken file must not hide every other run."""
    try:
        summary = json.loads(read_run_file(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        print(f"skipped {path}: not readable as JSON ({error})", file=sys.stderr)
        return None
    if not isinstance(summary, dict):
        print(f"skipped {path}: not a run summary", file=sys.stderr)
        return None
    wrong = next((key for key, kinds in FIELDS.items() if not isinstance(_field(summary, key), kinds)), None)
    if wrong is not None:
        print(
            f"skipped {path}: its {wrong} has the wrong type ({type(_field(summary, wrong)).__name__})", file=sys.stderr
        )
        return None
    return summary


def _field(summary: dict, key: str):
    """`best_checkpoint.score` -> summary["best_checkpoint"]["score"]; None where a part is missing."""
    value = summary
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _headers(monitor: str | None) -> dict[str, str]:
    """Column -> its header: `best` and `test` name the metric when every run monitors the same one."""
    named = {"best": f"best {monitor}", "test": counterpart(monitor, "test") or "test"} if monitor else {}
    return {column: named.get(column, column) for column in COLUMNS}


def _row(run: Path, summary: dict, monitor: str | None, named: bool) -> dict[str, str]:
    best = summary.get("best_checkpoint") or {}
    test = counterpart(monitor, "test")
    git = summary.get("git") or {}
    commit = (git.get("commit") or "-")[:7] + (" (dirty)" if git.get("dirty") else "")
    return {
        "run": str(run),
        "status": _status(summary),
        "epochs": str(summary.get("epochs", "-")),
        "best": _score(best.get("score"), monitor if named else None),
        "test": _score((summary.get("metrics") or {}).get(test), test if named else None),
        "wall": "-" if summary.get("wall_time_s") is None else duration(summary["wall_time_s"]),
        "config": (summary.get("config_hash") or "-")[:8],
        "commit": commit,
    }


def _status(summary: dict) -> str:
    status = str(summary.get("status", "-"))
    process = summary.get("process")
    return "killed" if status == "running" and process is not None and is_dead(process) else status


def differences(summaries: list[dict]) -> list[str]:
    """For each run, its values of the config keys whose values are not the same in every listed run that has a
    config (`lr=0.003 max_epochs=20`; a key it lacks is left out), each key by the shortest end of its name that no
    other such key shares."""
    configs = [_settings(summary.get("config")) for summary in summaries]
    known = [config for config in configs if config is not None]
    keys = sorted({key for config in known for key in config})
    # A key a run lacks (another DataModule's argument) counts as None there: `kind=None` sets no run apart.
    differing = [key for key in keys if len({_show(config.get(key)) for config in known}) > 1]
    names = _short_names(differing)
    shown = [" ".join(f"{names[k]}={_show(config[k])}" for k in differing if k in config) for config in known]
    texts = iter(shown)
    return [(next(texts) or "-") if config is not None else "-" for config in configs]


def _settings(config) -> dict | None:
    if not isinstance(config, dict):
        return None  # an evaluation of a loose checkpoint keeps no config of a fit
    # `model.init_args.lr` reads as `model.lr`: the class-path wrapping is how the config is stored, not a name.
    settings = {}
    for key, value in flatten(config).items():
        if key in UNCOMPARED:
            continue
        key = key.replace(".init_args.", ".")
        if key.endswith(".class_path"):  # a class chosen by class path reads as its name: `data=FileDataModule`
            key, value = key.removesuffix(".class_path"), str(value).rpartition(".")[2]
        settings[key] = value
    return settings


def _short_names(keys: list[str]) -> dict[str, str]:
    """`model.lr` -> `lr`; `data.seed` and `model.network.seed` -> `data.seed` and `network.seed`."""
    names = {}
    for key in keys:
        parts = key.split(".")
        for n in range(1, len(parts) + 1):
            end = ".".join(parts[-n:])
            if not any(other != key and (other == end or other.endswith("." + end)) for other in keys):
                break
        names[key] = end
    return names


def _show(value) -> str:
    """A value in a few characters: a class chosen by class path as its class's name, a list item by item."""
    if isinstance(value, dict) and "class_path" in value:
        return str(value["class_path"]).rpartition(".")[2]
    if isinstance(value, list):
        return "[" + ",".join(_show(item) for item in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value).replace(" ", "")


def _score(value, metric: str | None = None) -> str:
    """`0.9944`, `0.9944 val/f1` where the header does not name the metric, or `-`."""
    if not isinstance(value, int | float):
        return "-"
    return f"{value:.4f}" + (f" {metric}" if metric else "")


def _modified(path: Path) -> str:
    """A summary without a start time (an evaluation of a loose checkpoint) sorts by when it was written."""
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")


def _table(rows: list[dict[str, str]], headers: dict[str, str]) -> str:
    widths = {column: max(len(headers[column]), *(len(row[column]) for row in rows)) for column in COLUMNS}
    lines = [[headers[column].ljust(widths[column]) for column in COLUMNS]]
    lines += [[row[column].ljust(widths[column]) for column in COLUMNS] for row in rows]
    return "\n".join("  ".join(line).rstrip() for line in lines)


def main(args: list[str] | None = None) -> list[dict[str, str]]:
    return auto_cli(list_runs, args=args, prog=f"{program()} runs")
