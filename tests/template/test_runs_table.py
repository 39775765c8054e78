"""`make runs` (python -m project runs): one line per run from its summary.json, newest first, so that runs
compare at a glance; a broken summary is skipped with a note, never a crash."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lightning_runs.console import duration
from lightning_runs.tools.runs import COLUMNS, list_runs
from support import ROOT, run, working_directory

TINY = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3"]
RUNS = ["runs/digits/version_1", "runs/other/version_0", "runs/digits/version_0"]  # newest first


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    """runs/digits/version_0 fitted and tested, then runs/other/version_0 fitted, then runs/digits/version_1
    crashed at its second step."""
    home = tmp_path_factory.mktemp("three_runs")
    with working_directory(home):
        run("fit", *TINY)
        run("test", "--ckpt_path=best")
        run("fit", *TINY, "--trainer.logger.init_args.name=other")
        with pytest.raises(RuntimeError, match="crash at step 1"):
            run("fit", *TINY, "--trainer.callbacks+=support.CrashAt", "--trainer.callbacks.step=1")
    return home


@pytest.fixture
def here(three_runs, tmp_path):
    """A copy of the three runs in this test's directory, to list or to break."""
    shutil.copytree(three_runs / "runs", tmp_path / "runs")


def table(capsys, *args: str) -> list[dict[str, str]]:
    """What `python -m project runs <args>` prints, as one dict per run (keyed by COLUMNS), cut at the
    header's columns (two spaces or more apart); the header itself under "header"."""
    list_runs(*args)
    header, *lines = capsys.readouterr().out.splitlines()
    starts = [match.start() for match in re.finditer(r"(?:^|(?<=  ))\S", header)]
    ends = [*starts[1:], None]
    titles = dict(zip(COLUMNS, (header[a:b].strip() for a, b in zip(starts, ends, strict=True)), strict=True))
    return [titles] + [{c: line[a:b].strip() for c, a, b in zip(COLUMNS, starts, ends, strict=True)} for line in lines]


@pytest.mark.slow
def test_one_line_per_run_newest_first_with_what_its_summary_says(here, capsys):
    titles, *rows = table(capsys)
    monitor = json.loads(Path(RUNS[2], "summary.json").read_text())["best_checkpoint"]["monitor"]
    test = f"test/{monitor.split('/')[1]}"  # its counterpart: val/acc -> test/acc
    assert (titles["best"], titles["test"]) == (f"best {monitor}", test), "all monitor one metric: named once"
    assert [row["run"] for row in rows] == RUNS
    for row in rows:
        summary = json.loads(Path(row["run"], "summary.json").read_text())
        commit = summary["git"]["commit"]
        assert (row["status"], row["epochs"]) == (summary["status"], str(summary["epochs"]))
        best = summary["best_checkpoint"]
        assert row["best"] == (f"{best['score']:.4f}" if best else "-")
        assert row["wall"] == duration(summary["wall_time_s"])
        assert row["config"] == summary["config_hash"][:8]
        assert row["commit"] == ("-" if commit is None else commit[:7]) + (
            " (dirty)" if summary["git"]["dirty"] else ""
        )
    assert [row["status"] for row in rows] == ["failed", "completed", "completed"]
    assert [row["epochs"] for row in rows] == ["0", "2", "2"] and rows[0]["best"] == "-", "crashed at once"
    tested = json.loads(Path(RUNS[2], "summary.json").read_text())["metrics"][test]
    assert [row["test"] for row in rows] == ["-", "-", f"{tested:.4f}"], "only the tested run has one"


@pytest.mark.slow
def test_name_keeps_the_runs_of_one_experiment(here, capsys):
    _, *rows = table(capsys, "digits")
    assert [row["run"] for row in rows] == ["runs/digits/version_1", "runs/digits/version_0"]


@pytest.mark.slow
def test_a_corrupt_summary_is_skipped_with_a_note_and_the_others_still_listed(here, capsys):
    broken = Path("runs/digits/version_7/summary.json")
    broken.parent.mkdir()
    broken.write_text('{"status": "comp')  # a disk that filled up mid-write, or a hand edit gone wrong
    list_runs()
    output = capsys.readouterr()
    assert output.err.startswith(f"skipped {broken}: not readable as JSON")
    assert [line.split()[0] for line in output.out.splitlines()[1:]] == RUNS


def test_no_runs_says_so(capsys):
    assert list_runs() == []
    assert capsys.readouterr().out == "no runs in runs/\n"


def test_make_help_lists_make_runs():
    help = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "make runs" in help
