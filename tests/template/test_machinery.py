"""The machinery (the library in lightning-runs/, its tools too) knows the contract (contract/parts.py), never
the example: no metric, field, class or module of the example in its files, nor its command (`python -m project`: the
library derives it from the owner's package), nothing of the owner's package imported;
and a copy that monitors another metric keeps its best checkpoint in the summary, the HPARAMS tab, the closing block
and the runs table."""

import json
import re
from pathlib import Path

import lightning as L
import pytest
from tensorboard.plugins.hparams import metadata as hparams_metadata

import project
from lightning_runs.folders.naming import data_label
from lightning_runs.tools.runs import list_runs
from support import ONE_EPOCH_TWO_BATCHES, ROOT, read_events, run

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

MONITOR_LOSS = ["--checkpoint.monitor=val/loss", "--checkpoint.mode=min"]


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


def test_a_run_monitoring_another_metric_keeps_it_everywhere(capsys):
    fit = run("fit", *ONE_EPOCH_TWO_BATCHES, *MONITOR_LOSS, "--test_best=true", "--quiet")
    block = capsys.readouterr().out.split("Fit completed")[-1].splitlines()  # after the test's metrics table
    folder = Path(fit.trainer.logger.log_dir)
    summary = json.loads((folder / "summary.json").read_text())
    best = summary["best_checkpoint"]
    assert (best["monitor"], best["mode"]) == ("val/loss", "min") and best["score"] == pytest.approx(
        fit.trainer.checkpoint_callback.best_model_score.item()
    )
    assert summary["metrics"]["test/loss"] == pytest.approx(fit.trainer.callback_metrics["test/loss"].item())

    # The HPARAMS tab: the best val/loss and the test/loss of that checkpoint, declared and filled in.
    events = read_events(folder)
    content = events.PluginTagToContent(hparams_metadata.PLUGIN_NAME)
    experiment = hparams_metadata.parse_experiment_plugin_data(content[hparams_metadata.EXPERIMENT_TAG])
    assert {m.name.tag for m in experiment.metric_infos} == {"hp/best_val_loss", "hp/test_loss"}
    assert events.Scalars("hp/best_val_loss")[-1].value == pytest.approx(best["score"])
    assert events.Scalars("hp/test_loss")[-1].value == pytest.approx(summary["metrics"]["test/loss"])

    # The closing block names the counterpart of the monitored metric.
    score = f"{summary['metrics']['test/loss']:.4f}"
    assert f"  best val/loss {best['score']:.4f} at epoch 1: {folder}/checkpoints/best.ckpt" in block
    assert f"  test/loss    {score} of the best checkpoint" in block
    assert not [line for line in block if "acc" in line], "nothing of the metric the run does not monitor"

    # `make runs`: the same metric for every run, named once in the header.
    (row,) = list_runs()
    header = capsys.readouterr().out.splitlines()[0]
    assert "best val/loss" in header and "test/loss" in header and "val/acc" not in header
    assert (row["best"], row["test"]) == (f"{best['score']:.4f}", score)


def test_runs_monitoring_different_metrics_say_which_in_each_cell(capsys):
    run("fit", *ONE_EPOCH_TWO_BATCHES, "--trainer.logger.init_args.name=a")
    run("fit", *ONE_EPOCH_TWO_BATCHES, *MONITOR_LOSS, "--trainer.logger.init_args.name=b")
    capsys.readouterr()
    rows = list_runs()
    header = capsys.readouterr().out.splitlines()[0]
    assert header.split()[3:5] == ["best", "test"], "no single metric to name"
    monitors = {row["run"]: row["best"].split()[1] for row in rows}
    val_acc = json.loads(Path("runs/a/version_0/summary.json").read_text())["best_checkpoint"]["monitor"]
    assert monitors == {"runs/a/version_0": val_acc, "runs/b/version_0": "val/loss"}


def test_a_test_on_other_data_is_kept_apart_from_the_runs_own_score():
    fit = run("fit", *ONE_EPOCH_TWO_BATCHES)
    path = Path(fit.trainer.logger.log_dir, "summary.json")
    # Another batch size leaves the split as it is: the run's own score.
    own = run("test", "--ckpt_path=best", "--data.batch_size=16").trainer.callback_metrics["test/loss"].item()
    summary = json.loads(path.read_text())
    assert summary["metrics"]["test/loss"] == pytest.approx(own) and "results" not in summary
    # Another split, with other test samples.
    other = run("test", "--ckpt_path=best", "--data.seed=1").trainer.callback_metrics["test/loss"].item()
    summary = json.loads(path.read_text())
    assert summary["metrics"]["test/loss"] == pytest.approx(own), "the run's own score stays"
    *_, tested = summary["evaluations"]
    assert tested["data"]["class_path"] == summary["data"]["class_path"] == summary["config"]["data"]["class_path"]
    assert (tested["data"]["init_args"]["seed"], summary["data"]["init_args"]["seed"]) == (1, 0)
    assert summary["results"] == {data_label(tested["data"]): tested["metrics"]}
    assert tested["metrics"]["test/loss"] == pytest.approx(other) != pytest.approx(own)


class Folders(L.LightningDataModule):
    """A DataModule of another shape: its data is a folder and a file, required, plus an optional setting."""

    def __init__(self, root: str, labels: Path, size: int = 32) -> None:
        super().__init__()


class MoreFolders(Folders):
    def __init__(self, split: str, **kwargs) -> None:
        super().__init__(**kwargs)


def test_the_data_label_comes_from_the_files_given_to_required_arguments(tmp_path):
    (tmp_path / "flowers").mkdir()
    (tmp_path / "flowers.csv").write_text("")
    given = {"root": str(tmp_path / "flowers"), "labels": str(tmp_path / "flowers.csv"), "size": 64}
    assert data_label({"class_path": f"{__name__}.Folders", "init_args": given}) == "flowers-flowers"
    # Arguments passed on to a base through **kwargs count as jsonargparse reads them; a value that names no file
    # (here "train") is no part of the name.
    assert data_label({"class_path": f"{__name__}.MoreFolders", "init_args": {**given, "split": "train"}}) == (
        "flowers-flowers"
    )
    # Nothing that names a file: the class's short name, lower-cased, without its "DataModule".
    assert data_label({"class_path": f"{__name__}.Folders", "init_args": {"root": "gone", "labels": "gone"}}) == (
        "folders"
    )
    assert data_label({"class_path": "lightning.pytorch.demos.boring_classes.BoringDataModule"}) == "boring"
