"""`python -m <package> runs` (lightning_runs.tools.runs): one line per run from its summary.json, newest first, so
that runs compare at a glance; a broken summary is skipped with a note, never a crash."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tiny_runs import QUIET, command, run

from lightning_runs import processes
from lightning_runs.console import duration
from lightning_runs.tools.runs import COLUMNS, list_runs

TINY = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3"]
RUNS = ["runs/tiny/version_1", "runs/other/version_0", "runs/tiny/version_0"]  # newest first


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    """runs/tiny/version_0 fitted and tested, then runs/other/version_0 fitted, then runs/tiny/version_1 crashed at
    its second step."""
    home = tmp_path_factory.mktemp("three_runs")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        run("fit", *TINY)
        run("test", "--ckpt_path=best")
        run("fit", *TINY, "--trainer.logger.init_args.name=other")
        with pytest.raises(RuntimeError, match="crash at step 1"):
            run("fit", *TINY, "--trainer.callbacks+=tiny_stops.CrashAt", "--trainer.callbacks.step=1")
    return home


@pytest.fixture
def here(three_runs, tmp_path):
    """A copy of the three runs in this test's directory, to list or to break."""
    shutil.copytree(three_runs / "runs", tmp_path / "runs")


def table(capsys, *args: str) -> list[dict[str, str]]:
    """What `python -m <package> runs <args>` prints, as one dict per run (keyed by COLUMNS), cut at the header's
    columns (two spaces or more apart); the header itself first."""
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
    assert monitor == "val/loss", "the tiny task monitors a loss: nothing may lean on a val/acc"
    assert (titles["best"], titles["test"]) == ("best val/loss", "test/loss"), "all monitor one metric: named once"
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
    tested = json.loads(Path(RUNS[2], "summary.json").read_text())["metrics"]["test/loss"]
    assert [row["test"] for row in rows] == ["-", "-", f"{tested:.4f}"], "only the tested run has one"
    # All three trained one recipe; the crashed one had a callback more.
    assert [row["differs"] for row in rows] == ["callbacks=[CrashAt]", "callbacks=None", "callbacks=None"]


@pytest.mark.slow
def test_name_keeps_the_runs_of_one_experiment(here, capsys):
    _, *rows = table(capsys, "tiny")
    assert [row["run"] for row in rows] == ["runs/tiny/version_1", "runs/tiny/version_0"]


@pytest.mark.slow
def test_a_corrupt_summary_is_skipped_with_a_note_and_the_others_still_listed(here, capsys):
    broken = Path("runs/tiny/version_7/summary.json")
    broken.parent.mkdir()
    broken.write_text('{"status": "comp')  # a disk that filled up mid-write, or a hand edit gone wrong
    list_runs()
    output = capsys.readouterr()
    assert output.err.startswith(f"skipped {broken}: not readable as JSON")
    assert [line.split()[0] for line in output.out.splitlines()[1:]] == RUNS


def write_summary(run: str, started: str, config: dict | None, git: dict) -> None:
    """A summary.json as a fit writes it, with only what the table reads."""
    Path(run).mkdir(parents=True)
    summary = {"status": "completed", "started": started, "epochs": 2, "config": config, "git": git}
    Path(run, "summary.json").write_text(json.dumps(summary))


def recipe(name: str, version: int, max_epochs: int, lr: float, seed: int = 0) -> dict:
    """A fit's config as config.yaml holds it, cut to the keys a table must tell apart (or must not)."""
    logger = {
        "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
        "init_args": {"name": name, "version": version},
    }
    return {
        "seed_everything": 0,
        "trainer": {"max_epochs": max_epochs, "logger": logger},
        "model": {"class_path": "tiny_tasks.TinyClassifier", "init_args": {"input_shape": [4], "lr": lr}},
        "data": {"class_path": "tiny_tasks.TinyDataModule", "init_args": {"seed": seed}},
        "ckpt_path": None,
    }


def test_differs_shows_each_runs_values_of_the_settings_that_are_not_the_same_in_every_run(capsys):
    git = {"commit": "0123456789abcdef", "dirty": False}
    write_summary("runs/tiny/version_0", "2026-12-01T10:00:00+00:00", recipe("tiny", 0, 2, 0.01), git)
    write_summary("runs/tiny/version_1", "2026-12-01T11:00:00+00:00", recipe("tiny", 1, 20, 0.003), git)
    write_summary("runs/other/version_0", "2026-12-01T12:00:00+00:00", recipe("other", 0, 50, 0.01, seed=1), git)
    write_summary("runs/loose/version_0", "2026-12-01T09:00:00+00:00", None, git)  # a test of a loose file
    titles, *rows = table(capsys)
    assert titles["differs"] == "differs"
    assert {row["run"]: row["differs"] for row in rows} == {
        "runs/other/version_0": "seed=1 lr=0.01 max_epochs=50",  # the run name and version: in the run column
        "runs/tiny/version_1": "seed=0 lr=0.003 max_epochs=20",
        "runs/tiny/version_0": "seed=0 lr=0.01 max_epochs=2",
        "runs/loose/version_0": "-",
    }
    _, *rows = table(capsys, "tiny")  # compared among the listed runs only
    assert [row["differs"] for row in rows] == ["lr=0.003 max_epochs=20", "lr=0.01 max_epochs=2"]


GOOD = {"status": "completed", "epochs": 2, "started": "2026-12-01T10:00:00+00:00", "wall_time_s": 9.8,
        "best_checkpoint": {"monitor": "val/loss", "score": 0.3}, "git": {"commit": "abcdef1234"}}  # fmt: skip
WRONG_TYPES = [
    ({"started": 1733000000}, "started has the wrong type (int)"),  # could not sort beside the others' text
    ({"best_checkpoint": ["val/loss", 0.3]}, "best_checkpoint has the wrong type (list)"),
    ({"best_checkpoint": {"monitor": "val/loss", "score": "0.3"}}, "best_checkpoint.score has the wrong type (str)"),
    ({"git": "abcdef1"}, "git has the wrong type (str)"),
    ({"wall_time_s": "10 s"}, "wall_time_s has the wrong type (str)"),
    ({"config_hash": 1234}, "config_hash has the wrong type (int)"),
    ({"metrics": [0.3]}, "metrics has the wrong type (list)"),
]


@pytest.mark.parametrize("edit,said", WRONG_TYPES, ids=[said for _, said in WRONG_TYPES])
def test_a_summary_with_a_field_of_the_wrong_type_is_skipped_naming_it_and_the_others_still_listed(edit, said, capsys):
    for version, summary in (("version_0", GOOD), ("version_1", {**GOOD, **edit})):
        Path("runs/tiny", version).mkdir(parents=True)
        Path("runs/tiny", version, "summary.json").write_text(json.dumps(summary))
    rows = list_runs()
    output = capsys.readouterr()
    assert [row["run"] for row in rows] == ["runs/tiny/version_0"] and "runs/tiny/version_0" in output.out
    assert output.err == f"skipped runs/tiny/version_1/summary.json: its {said}\n"


@pytest.mark.parametrize("target", ["/dev/zero", "big"])
def test_a_summary_that_is_a_device_or_too_large_is_skipped_unread(target, capsys):
    folder = Path("runs/odd/version_0")
    folder.mkdir(parents=True)
    if target == "big":
        Path("big").write_text(" " * 10_000_001)  # one byte past the limit of a run's small file
    (folder / "summary.json").symlink_to(Path(target).absolute())
    assert list_runs() == []
    said = capsys.readouterr().err
    assert f"skipped {folder}/summary.json: not readable as JSON" in said
    assert "not a regular file" in said if target == "/dev/zero" else "larger than 10000000 bytes" in said


def test_a_running_run_whose_process_is_gone_is_shown_killed_and_one_still_at_work_or_elsewhere_running(capsys):
    ended = subprocess.Popen(["sleep", "30"])
    gone = {**processes.this_process(), "pid": ended.pid, "started": processes.started(ended.pid)}
    ended.kill()
    ended.wait()
    recorded = {
        "runs/killed/version_0": gone,
        "runs/alive/version_0": processes.this_process(),
        "runs/elsewhere/version_0": {**gone, "host": "another-machine"},  # not ours to judge
        "runs/older/version_0": None,  # a summary from before processes were recorded
    }
    for folder, process in recorded.items():
        Path(folder).mkdir(parents=True)
        Path(folder, "summary.json").write_text(json.dumps({**GOOD, "status": "running", "process": process}))
    _, *rows = table(capsys)
    assert {row["run"]: row["status"] for row in rows} == {
        "runs/killed/version_0": "killed",
        "runs/alive/version_0": "running",
        "runs/elsewhere/version_0": "running",
        "runs/older/version_0": "running",
    }


@pytest.mark.slow
def test_a_fit_killed_before_its_first_checkpoint_is_listed_as_killed(capsys):
    kill = ["--trainer.callbacks+=tiny_stops.SignalAt", "--trainer.callbacks.step=1", "--trainer.callbacks.signum=9"]
    fit = command("fit", *QUIET, *TINY, *kill)
    assert fit.returncode == -9, fit.stderr[-2000:]
    assert json.loads(Path("runs/tiny/version_0/summary.json").read_text())["status"] == "running", "it said no more"
    assert not list(Path("runs/tiny/version_0/checkpoints").glob("*.ckpt"))
    _, row = table(capsys)
    assert row["status"] == "killed"


def test_no_runs_says_so(capsys):
    assert list_runs() == []
    assert capsys.readouterr().out == "no runs in runs/\n"
