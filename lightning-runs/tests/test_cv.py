"""`python -m <package> cv --folds K`: each fold a fit of its own that validates on its fold, a table of the folds'
best scores with their mean and standard deviation; a stopped CV continues where it stopped; a DataModule that takes
no fold is told what to accept."""

import json
import signal
import statistics
from pathlib import Path

import pytest
from tiny_runs import command, load, refusal, start, wait_for

ROOT = Path("runs/tiny/cv-study")


@pytest.mark.slow
def test_each_fold_validates_on_its_own_fold_and_the_table_sums_them(capsys):
    # In this process: the fold fits are processes of their own (python -m tiny_tasks fit) either way.
    done = command("cv", "--folds=3", "--study=study", "--test=true", "--args=[--trainer.max_epochs=1]")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((ROOT / "cv.json").read_text())
    scores = [row["val/loss"] for row in result["folds"]]
    assert [row["run"] for row in result["folds"]] == [str(ROOT / f"fold_{k}") for k in range(3)]
    assert result["summary"]["val/loss"] == {"mean": statistics.mean(scores), "std": statistics.stdev(scores)}
    assert all(isinstance(row["test/acc"], float) for row in result["folds"])
    assert "mean" in done.stdout and "(sample standard deviation over 3 folds)" in done.stdout
    validated = []
    for k in range(3):
        config = load(ROOT / f"fold_{k}/checkpoints/last.ckpt")["datamodule_hyper_parameters"]
        assert (config["folds"], config["fold"]) == (3, k)
        validated.append(set(fold_of(k)))
    assert not validated[0] & validated[1] and not validated[1] & validated[2]  # each sample validates once
    assert sum(map(len, validated)) == 192 + 32  # train + val of 256 points; the test split is never a fold's
    again = command("cv", "--folds=3", "--study=study", "--test=true", "--args=[--trainer.max_epochs=1]")
    assert "3 finished, 0 to run" in again.stdout and json.loads((ROOT / "cv.json").read_text()) == result


def fold_of(k: int) -> list[tuple[float, ...]]:
    from tiny_tasks import TinyDataModule

    data = TinyDataModule(folds=3, fold=k)
    data.setup("fit")
    return [tuple(point.tolist()) for point in data.splits["val"][0]]


@pytest.mark.slow
def test_a_stopped_cv_keeps_finished_folds_and_resumes_the_stopped_one():
    args = ["cv", "--folds=2", "--study=study", "--args=[--trainer.max_epochs=40,--data.n=512]"]
    cv = start(*args)
    wait_for(lambda: (ROOT / "fold_1/checkpoints/last.ckpt").exists(), what="fold 1's first checkpoint")
    finished = (ROOT / "fold_0/summary.json").read_text()
    cv.send_signal(signal.SIGTERM)
    _, err = cv.communicate(timeout=120)
    assert cv.returncode == 143, err[-2000:]
    assert "run the same command again" in err
    assert json.loads((ROOT / "fold_1/summary.json").read_text())["status"] == "interrupted"
    again = command(*args)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "1 finished, 1 to run" in again.stdout and "fit resumes runs/tiny/cv-study/fold_1" in again.stdout
    assert (ROOT / "fold_0/summary.json").read_text() == finished  # not rerun
    assert load(ROOT / "fold_1/checkpoints/last.ckpt")["epoch"] == 39


@pytest.mark.slow
def test_folds_in_parallel_write_a_log_each():
    done = command("cv", "--folds=2", "--workers=2", "--threads=1", "--args=[--trainer.max_epochs=1]")
    assert done.returncode == 0, done.stderr[-2000:]
    for k in range(2):
        assert "Fit completed" in Path(f"runs/tiny/cv-cv/fold_{k}.log").read_text()


def test_a_datamodule_without_folds_is_told_what_to_accept(capsys):
    from tiny_regression import regression_cli_main

    from lightning_runs import main

    line = refusal(capsys, lambda: main(regression_cli_main, "tiny_regression", ["cv", "--folds=2"]))
    assert "takes no folds and fold arguments; give its __init__ `folds: int | None = None, fold: int = 0`" in line
    assert not Path("runs").exists()


@pytest.mark.parametrize("option, said", [("--folds=1", "at least 2 folds"), ("--study=a/b", "one folder name")])
def test_bad_options_are_one_line(capsys, option, said):
    from lightning_runs import main
    from tiny_tasks import cli_main

    args = ["cv", option] + ([] if option.startswith("--folds") else ["--folds=2"])
    assert said in refusal(capsys, lambda: main(cli_main, "tiny_tasks", args))
