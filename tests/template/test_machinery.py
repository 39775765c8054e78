"""The machinery (the library in lightning-runs/, its tools too) knows what it is given, never the example: no
metric, field, class or module of the example in its files, nor its command (`python -m project`: the library derives
it from the owner's package), nothing of the owner's package imported; and a copy that monitors another metric keeps
its best checkpoint in the summary, the HPARAMS tab, the closing block and the runs table."""

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from tensorboard.plugins.hparams import metadata as hparams_metadata

from lightning_runs.tools.runs import list_runs

import project

from support import ONE_EPOCH_TWO_BATCHES, ROOT, read_events, run, working_directory

PACKAGE = project.__name__  # a copy may rename it
MACHINERY = sorted((ROOT / "lightning-runs/lightning_runs").rglob("*.py"))  # the tools/ folder too
LIBRARY = sorted((ROOT / "lightning-runs").rglob("*.py"))  # the machinery and its own tests, on tasks of their own
# What the example calls its metrics, fields, shapes and classes: none of it may appear in the machinery.
EXAMPLE = [
    re.escape(name)
    for name in ("val/acc", "test/acc", "8x8", "(8, 8)", "predict_path", ".splits", "val_fraction", "init_args.path")
]
EXAMPLE += [
    r"(?<![A-Za-z])(?:[Dd]igits?|DIGITS?)(?![a-z])",  # the word, in code or comments (DigitsCLI too)
    r"Digits(?:Classifier|DataModule|CNN)",
    rf"-m\s+{re.escape(PACKAGE)}\b",  # the command a copy types has its own package's name (console.program)
]
PATTERN = re.compile("|".join(f"(?:{p})" for p in EXAMPLE))
# The library is given the owner's classes and cli_main (project/cli.py); it never imports them.
OWNERS_IMPORT = re.compile(rf"^\s*(?:import\s+{PACKAGE}\b|from\s+{PACKAGE}(?:\.[\w.]+)?\s+import\b)")

MONITOR_LOSS = ["--best_checkpoint.monitor=val/loss", "--best_checkpoint.mode=min"]


def test_the_machinery_names_nothing_of_the_example():
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {match[0]!r} in {line.strip()}"
        for path in MACHINERY
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if (match := PATTERN.search(line))
    ]
    assert MACHINERY, "no machinery found"
    assert not hits, f"{len(hits)} mentions of the example in the machinery:\n" + "\n".join(hits)


def test_the_library_and_its_tests_import_nothing_of_the_owners_package():
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in LIBRARY
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OWNERS_IMPORT.search(line)
    ]
    assert OWNERS_IMPORT.search(f"from {PACKAGE}.cli import cli_main") and OWNERS_IMPORT.search(f"import {PACKAGE}")
    assert not hits, f"{len(hits)} imports of {PACKAGE} in the library:\n" + "\n".join(hits)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """runs/ of two fits the tests below share (copied before one writes): `a` monitors the example's metric, `b`
    val/loss and tests its best checkpoint; with b's printed output and the scores its trainer held."""
    home = tmp_path_factory.mktemp("two_runs")
    with working_directory(home), contextlib.redirect_stdout(io.StringIO()) as out:
        run("fit", *ONE_EPOCH_TWO_BATCHES, "--name=a")
        fit = run("fit", *ONE_EPOCH_TWO_BATCHES, *MONITOR_LOSS, "--name=b", "--test_best=true", "--quiet")
    held = fit.trainer.checkpoint_callback.best_model_score.item(), fit.trainer.callback_metrics["test/loss"].item()
    return home / "runs", out.getvalue(), Path(fit.trainer.logger.log_dir), held


def test_a_run_monitoring_another_metric_keeps_it_everywhere(two_runs, capsys):
    runs, out, log_dir, (best_score, test_loss) = two_runs
    shutil.copytree(runs / "b", "runs/b")  # `make runs` below lists this run alone
    block = out.split("Fit completed")[-1].splitlines()  # after the test's metrics table
    folder = log_dir
    summary = json.loads((folder / "summary.json").read_text())
    best = summary["best_checkpoint"]
    assert (best["monitor"], best["mode"]) == ("val/loss", "min") and best["score"] == pytest.approx(best_score)
    assert summary["metrics"]["test/loss"] == pytest.approx(test_loss)

    # The HPARAMS tab: the best val/loss and the test/loss of that checkpoint, declared and filled in.
    events = read_events(folder)
    content = events.PluginTagToContent(hparams_metadata.PLUGIN_NAME)
    experiment = hparams_metadata.parse_experiment_plugin_data(content[hparams_metadata.EXPERIMENT_TAG])
    assert {m.name.tag for m in experiment.metric_infos} == {"hp/best_val_loss", "hp/test_loss"}
    assert events.Scalars("hp/best_val_loss")[-1].value == pytest.approx(best["score"])
    assert events.Scalars("hp/test_loss")[-1].value == pytest.approx(summary["metrics"]["test/loss"])

    # The closing block names the monitored metric, and the test of that checkpoint.
    score = f"{summary['metrics']['test/loss']:.4f}"
    assert f"  best val/loss {best['score']:.4f}: {folder}/checkpoints/best.ckpt" in block
    assert f"  test/loss    {score} of the best checkpoint" in block

    # `make runs`: the same metric for every run, named once in the header.
    (row,) = list_runs()
    header = capsys.readouterr().out.splitlines()[0]
    assert "best val/loss" in header and "val/acc" not in header
    assert row["best"] == f"{best['score']:.4f}" and score in row["test"]


def test_runs_monitoring_different_metrics_say_which_in_each_cell(two_runs, capsys):
    shutil.copytree(two_runs[0], "runs")
    rows = list_runs()
    header = capsys.readouterr().out.splitlines()[0]
    assert header.split()[3:5] == ["best", "test"], "no single metric to name"
    monitors = {row["run"]: row["best"].split()[1] for row in rows}
    val_acc = json.loads(Path("runs/a/version_0/summary.json").read_text())["best_checkpoint"]["monitor"]
    assert monitors == {"runs/a/version_0": val_acc, "runs/b/version_0": "val/loss"}


def test_a_test_on_other_data_is_kept_apart_from_the_runs_own_score(two_runs):
    shutil.copytree(two_runs[0] / "a", "runs/a")
    path = Path("runs/a/version_0/summary.json")
    # Another batch size leaves the split as it is: the run's own score.
    own = run("test", "--name=a", "--ckpt_path=best", "--data.batch_size=16")
    own = own.trainer.callback_metrics["test/loss"].item()
    summary = json.loads(path.read_text())
    assert summary["metrics"]["test/loss"] == pytest.approx(own) and "results" not in summary
    # Another split, with other test samples.
    other = run("test", "--name=a", "--ckpt_path=best", "--data.seed=1")
    other = other.trainer.callback_metrics["test/loss"].item()
    summary = json.loads(path.read_text())
    assert summary["metrics"]["test/loss"] == pytest.approx(own), "the run's own score stays"
    *_, tested = summary["evaluations"]  # the test of other data is the run's record of that evaluation
    assert tested["data"]["class_path"] == summary["config"]["data"]["class_path"]
    assert (tested["data"]["init_args"]["seed"], summary["config"]["data"]["init_args"]["seed"]) == (1, 0)
    assert tested["metrics"]["test/loss"] == pytest.approx(other) != pytest.approx(own)
