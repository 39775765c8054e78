"""`python -m <package> runs` (lightning_runs.tools.runs): one line per run from its summary.json, newest first, so
that runs compare at a glance; every readable run is listed, and each summary that cannot be read is one line on
stderr, never a crash (issue 44, item 5)."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tiny_runs import exit_status, run

from lightning_runs import processes
from lightning_runs.console import duration
from lightning_runs.tools.runs import COLUMNS, list_runs

TINY = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3"]
RUNS = ["runs/tiny/version_1", "runs/other/version_0", "runs/tiny/version_0"]  # newest first


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    """runs/tiny/version_0 fitted and tested, then runs/other/version_0 fitted with another lr, then
    runs/tiny/version_1 crashed at its second step."""
    home = tmp_path_factory.mktemp("three_runs")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        run("fit", *TINY)
        run("test", "--ckpt_path=best")
        run("fit", *TINY, "--name=other", "--model.lr=0.01")
        with pytest.raises(RuntimeError, match="crash at step 1"):
            run("fit", *TINY, "--trainer.callbacks+=lightning_runs.testing.CrashAt", "--trainer.callbacks.step=1")
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
        dirty = " (dirty)" if summary["git"]["dirty"] else ""
        assert row["commit"] == ("-" if commit is None else commit[:7]) + dirty
    assert [row["status"] for row in rows] == ["failed", "completed", "completed"]
    assert [row["epochs"] for row in rows] == ["0", "2", "2"] and rows[0]["best"] == "-", "crashed at once"
    tested = json.loads(Path(RUNS[2], "summary.json").read_text())["metrics"]["test/loss"]
    assert [row["test"] for row in rows] == ["-", "-", f"{tested:.4f}"], "only the tested run has one"
    # One recipe but the other run's lr; the crash's callback is no part of a recipe (configs.UNCOMPARED).
    assert [row["differs"] for row in rows] == ["lr=0.05", "lr=0.01", "lr=0.05"]
    assert rows[0]["config"] == rows[2]["config"] != rows[1]["config"]


@pytest.mark.slow
def test_name_keeps_the_runs_of_one_name(here, capsys):
    _, *rows = table(capsys, "tiny")
    assert [row["run"] for row in rows] == ["runs/tiny/version_1", "runs/tiny/version_0"]


@pytest.mark.slow
def test_a_fit_killed_before_its_first_checkpoint_is_listed_as_killed(capsys):
    kill = [
        "--trainer.callbacks+=lightning_runs.testing.SignalAt",
        "--trainer.callbacks.step=1",
        "--trainer.callbacks.signum=9",
    ]
    assert exit_status(*TINY, *kill) == -9  # a process of its own, forked from this one
    assert json.loads(Path("runs/tiny/version_0/summary.json").read_text())["status"] == "running", "it said no more"
    assert not list(Path("runs/tiny/version_0/checkpoints").glob("*.ckpt"))
    _, row = table(capsys)
    assert row["status"] == "killed"


# Summaries written here with only what the table reads, as a fit writes them.
GOOD = {"status": "completed", "epochs": 2, "started": "2026-12-01T10:00:00+00:00", "wall_time_s": 9.8,
        "best_checkpoint": {"monitor": "val/loss", "score": 0.3}, "git": {"commit": "abcdef1234"}}  # fmt: skip


def write_summary(folder: str, summary=GOOD, text: str | None = None) -> Path:
    path = Path(folder, "summary.json")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(summary) if text is None else text)
    return path


def recipe(max_epochs: int, lr: float, seed: int = 0, name: str = "tiny", version: int = 0) -> dict:
    """A fit's config as config.yaml holds it, cut to the keys a table must tell apart (or must not)."""
    logger = {"name": name, "version": version}
    return {
        "seed_everything": 0,
        "trainer": {"max_epochs": max_epochs, "logger": {"class_path": "TensorBoardLogger", "init_args": logger}},
        "model": {"class_path": "tiny_tasks.TinyClassifier", "init_args": {"input_shape": [4], "lr": lr}},
        "data": {"class_path": "tiny_tasks.TinyDataModule", "init_args": {"seed": seed}},
        "ckpt_path": None,
        "quiet": name == "other",
    }


def test_differs_shows_each_runs_values_of_the_settings_that_are_not_the_same_in_every_run(capsys):
    def fit(folder: str, hour: int, config: dict | None) -> None:
        write_summary(folder, {**GOOD, "started": f"2026-12-01T{hour}:00:00+00:00", "config": config})

    fit("runs/tiny/version_0", 10, recipe(2, 0.01))
    fit("runs/tiny/version_1", 11, recipe(20, 0.003, version=1))
    fit("runs/other/version_0", 12, recipe(50, 0.01, seed=1, name="other"))
    fit("runs/loose/version_0", 9, None)  # a test of a loose checkpoint keeps no config of a fit
    titles, *rows = table(capsys)
    assert titles["differs"] == "differs"
    assert {row["run"]: row["differs"] for row in rows} == {
        "runs/other/version_0": "seed=1 lr=0.01 max_epochs=50",  # name, version, --quiet: no part of a recipe
        "runs/tiny/version_1": "seed=0 lr=0.003 max_epochs=20",
        "runs/tiny/version_0": "seed=0 lr=0.01 max_epochs=2",
        "runs/loose/version_0": "-",
    }
    _, *rows = table(capsys, "tiny")  # compared among the listed runs only
    assert [row["differs"] for row in rows] == ["lr=0.003 max_epochs=20", "lr=0.01 max_epochs=2"]


def test_a_setting_named_as_the_end_of_another_is_told_apart_by_its_whole_name(capsys):
    for version, seed in ((0, 1), (1, 2)):  # seed_everything and a DataModule's own seed_everything both differ
        config = {"seed_everything": seed, "data": {"init_args": {"seed_everything": seed}}}
        write_summary(f"runs/tiny/version_{version}", {**GOOD, "started": f"2026-12-0{version + 1}", "config": config})
    _, *rows = table(capsys)
    assert [row["differs"] for row in rows] == [
        "data.seed_everything=2 seed_everything=2",
        "data.seed_everything=1 seed_everything=1",
    ]


def test_runs_monitoring_different_metrics_say_which_in_each_cell(capsys):
    write_summary("runs/a/version_0", {**GOOD, "metrics": {"test/loss": 0.4}})
    acc = {"monitor": "val_acc", "score": 0.9}  # Lightning's docs' names: its test counterpart is test_acc
    write_summary("runs/b/version_0", {**GOOD, "best_checkpoint": acc, "metrics": {"test_acc": 0.8}})
    write_summary("runs/c/version_0", {**GOOD, "best_checkpoint": {"monitor": "val_acc", "score": None}})  # running
    titles, *rows = table(capsys)
    assert (titles["best"], titles["test"]) == ("best", "test")
    assert {row["run"]: (row["best"], row["test"]) for row in rows} == {
        "runs/a/version_0": ("0.3000 val/loss", "0.4000 test/loss"),
        "runs/b/version_0": ("0.9000 val_acc", "0.8000 test_acc"),
        "runs/c/version_0": ("-", "-"),
    }


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
        write_summary(folder, {**GOOD, "status": "running", "process": process})
    _, *rows = table(capsys)
    assert {row["run"]: row["status"] for row in rows} == {
        "runs/killed/version_0": "killed",
        "runs/alive/version_0": "running",
        "runs/elsewhere/version_0": "running",
        "runs/older/version_0": "running",
    }


def test_no_runs_says_so(capsys):
    assert list_runs() == []
    assert capsys.readouterr().out == "no runs in runs/\n"


# Each summary below is one line on stderr, and the good run beside it is still listed.
UNREADABLE = {
    "corrupt": (b'{"status": "comp', "not JSON (Unterminated string"),  # a disk filled up mid-write, a hand edit
    "a list": (b"[1, 2]", "a JSON list, not a mapping"),
    "NaN wall time": (b'{"status": "completed", "wall_time_s": NaN}', "its wall_time_s is not a finite number (nan)"),
    "Infinity wall time": (b'{"wall_time_s": Infinity}', "its wall_time_s is not a finite number (inf)"),
    "deep nesting": (b'{"config": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply to read"),
    "not UTF-8": (b'{"status": "\xff"}', "not UTF-8 text (invalid start byte at byte 12)"),
    # Each field the table reads, of a type it cannot show.
    "started": (b'{"started": 1733000000}', "its started has the wrong type (int)"),  # could not sort beside text
    "best_checkpoint": (b'{"best_checkpoint": ["val/loss", 0.3]}', "its best_checkpoint has the wrong type (list)"),
    "monitor": (b'{"best_checkpoint": {"monitor": 1}}', "its best_checkpoint.monitor has the wrong type (int)"),
    "git": (b'{"git": "abcdef1"}', "its git has the wrong type (str)"),
    "wall_time_s": (b'{"wall_time_s": "10 s"}', "its wall_time_s has the wrong type (str)"),
    "config_hash": (b'{"config_hash": 1234}', "its config_hash has the wrong type (int)"),
    "metrics": (b'{"metrics": [0.3]}', "its metrics has the wrong type (list)"),
    "config": (b'{"config": "lr=0.1"}', "its config has the wrong type (str)"),
    "process": (b'{"status": "running", "process": [1]}', "its process has the wrong type (list)"),
}


@pytest.mark.parametrize("content,said", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_summary_is_one_line_naming_why_and_every_other_run_is_listed(content, said, capsys):
    write_summary("runs/tiny/version_0")
    broken = write_summary("runs/tiny/version_1", text="")
    broken.write_bytes(content)
    rows = list_runs()
    output = capsys.readouterr()
    assert [row["run"] for row in rows] == ["runs/tiny/version_0"] and "runs/tiny/version_0" in output.out
    assert output.err.startswith(f"skipped {broken}: {said}") and output.err.count("\n") == 1, output.err


@pytest.mark.parametrize("target", ["/dev/zero", "big", "folder"])
def test_a_summary_that_is_a_device_a_folder_or_too_large_is_skipped_unread(target, capsys):
    write_summary("runs/tiny/version_0")
    folder = Path("runs/odd/version_0")
    folder.mkdir(parents=True)
    if target == "big":
        Path("big").write_text(" " * 10_000_001)  # one byte past the limit of a run's small file
    if target == "folder":
        (folder / "summary.json").mkdir()
    else:
        (folder / "summary.json").symlink_to(Path(target).absolute())
    assert [row["run"] for row in list_runs()] == ["runs/tiny/version_0"]
    reason = "larger than 10,000,000 bytes" if target == "big" else "not a regular file"
    assert capsys.readouterr().err == f"skipped {folder}/summary.json: {reason}\n"


def test_control_characters_in_names_are_shown_escaped_and_never_split_a_line(capsys):
    odd = "a\nb\x1b[31m"  # a newline, and a terminal escape that would paint the rest of the table red
    write_summary(f"runs/{odd}/version_0", {**GOOD, "best_checkpoint": {"monitor": "val/\tloss", "score": 0.3}})
    write_summary(f"runs/{odd}/version_1", text="{")
    rows = list_runs()
    output = capsys.readouterr()
    assert [row["run"] for row in rows] == [f"runs/{odd}/version_0"]
    header, line = output.out.splitlines()
    assert line.startswith(r"runs/a\nb\x1b[31m/version_0  completed") and "best val/\\tloss" in header
    assert output.err.startswith(r"skipped runs/a\nb\x1b[31m/version_1/summary.json: not JSON")
    assert not [c for c in output.out + output.err if not c.isprintable() and c != "\n"]


def test_two_large_summaries_are_listed_with_every_setting_that_differs(capsys):
    # 16,000 settings each (~250 KB), every one different: the table used to compare each pair of them (50 s).
    for version in (0, 1):
        settings = {f"p{i}": (version + 1) * i for i in range(1, 16_001)}
        config = {"model": {"class_path": "tiny_tasks.TinyClassifier", "init_args": settings}}
        write_summary(f"runs/tiny/version_{version}", {**GOOD, "started": f"2026-12-0{version + 1}", "config": config})
    assert Path("runs/tiny/version_1/summary.json").stat().st_size > 250_000
    rows = list_runs()
    capsys.readouterr()
    assert [row["differs"].split()[:2] for row in rows] == [["p1=2", "p10=20"], ["p1=1", "p10=10"]]
    assert [len(row["differs"].split()) for row in rows] == [16_000, 16_000]
