"""`python -m <package> cv --folds K`: each fold a fit of its own that validates on its fold, a table of the folds'
best scores with their mean and standard deviation; a stopped CV continues where it stopped; a DataModule that takes
no fold is told what to accept."""

import inspect
import json
import signal
import statistics
from pathlib import Path

import pytest
import torch
import yaml
from tiny_runs import finished, load, process_environment, refusal, snapshot, start, wait_for

import lightning_runs
from tiny_tasks import cli_main

ROOT = Path("runs/tiny/cv-study")


@pytest.fixture
def cv(monkeypatch, capfd):
    """`python -m tiny_tasks cv <args>` in this process, as a finished process tells it: its folds are `python -m
    tiny_tasks fit` processes either way, seeing this checkout with one thread each."""
    for name in ("PYTHONPATH", "OMP_NUM_THREADS"):
        monkeypatch.setenv(name, process_environment()[name])
    return lambda *args: finished(capfd, lambda: lightning_runs.main(cli_main, "tiny_tasks", list(args)))


@pytest.mark.slow
def test_each_fold_validates_on_its_own_fold_and_the_table_sums_them(cv):
    done = cv("cv", "--folds=3", "--study=study", "--test=true", "--trainer.max_epochs", "1")  # as fit takes it
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
    again = cv("cv", "--folds=3", "--study=study", "--test=true", "--args=[--trainer.max_epochs=1]")  # the same
    assert "3 finished, 0 to run" in again.stdout and json.loads((ROOT / "cv.json").read_text()) == result


def fold_of(k: int) -> list[tuple[float, ...]]:
    from tiny_tasks import TinyDataModule

    data = TinyDataModule(folds=3, fold=k)
    data.setup("fit")
    return [tuple(point.tolist()) for point in data.splits["val"][0]]


@pytest.mark.slow
def test_a_stopped_cv_keeps_finished_folds_and_resumes_the_stopped_one(cv):
    args = ["cv", "--folds=2", "--study=study", "--trainer.max_epochs=40", "--data.n=512"]
    stopped = start(*args)  # a process: SIGTERM is what it is sent
    wait_for(lambda: (ROOT / "fold_1/checkpoints/last.ckpt").exists(), what="fold 1's first checkpoint")
    finished = (ROOT / "fold_0/summary.json").read_text()
    stopped.send_signal(signal.SIGTERM)
    _, err = stopped.communicate(timeout=120)
    assert stopped.returncode == 143, err[-2000:]
    assert "run the same command again" in err
    assert json.loads((ROOT / "fold_1/summary.json").read_text())["status"] == "interrupted"
    again = cv(*args)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "1 finished, 1 to run" in again.stdout and "fit resumes runs/tiny/cv-study/fold_1" in again.stdout
    assert (ROOT / "fold_0/summary.json").read_text() == finished  # not rerun
    assert load(ROOT / "fold_1/checkpoints/last.ckpt")["epoch"] == 39


@pytest.mark.slow
def test_folds_in_parallel_write_a_log_each(cv):
    done = cv("cv", "--folds=2", "--workers=2", "--threads=1", "--trainer.max_epochs=1")
    assert done.returncode == 0, done.stderr[-2000:]
    for k in range(2):
        assert "Fit completed" in Path(f"runs/tiny/cv-cv/fold_{k}.log").read_text()


def test_a_datamodule_without_folds_is_told_what_to_accept(capsys):
    from tiny_regression import regression_cli_main

    from lightning_runs import main

    line = refusal(capsys, lambda: main(regression_cli_main, "tiny_regression", ["cv", "--folds=2"]))
    assert "takes no folds and fold arguments; give its __init__ `folds: int | None = None, fold: int = 0`" in line
    assert not Path("runs").exists()


@pytest.mark.parametrize(
    "option, said",
    [
        ("--folds=1", "at least 2 folds"),
        ("--study=a/b", "one folder name"),
        ("--study=a\nb", "one folder name"),
        ("--trainer.max_epochz=1", "unknown option --trainer.max_epochz: did you mean --trainer.max_epochs?"),
    ],
    ids=["one fold", "a study name with a slash", "a study name with a newline", "a misspelt fit option"],
)
def test_bad_options_are_one_line(capsys, option, said):
    from lightning_runs import main
    from tiny_tasks import cli_main

    args = ["cv", option] + ([] if option.startswith("--folds") else ["--folds=2"])
    assert said in refusal(capsys, lambda: main(cli_main, "tiny_tasks", args))
    assert not Path("runs").exists()


def test_options_that_are_not_the_tools_go_to_fit_with_their_values_as_fit_takes_them():
    from lightning_runs.tools.cv import cv
    from lightning_runs.tools.function_cli import _split

    own = set(inspect.signature(cv).parameters)
    given = ["--folds", "5", "--model.lr", "0.003", "--study=s", "--trainer.callbacks+=a.B", "--model.x", "-1", "-h"]
    assert _split(given, own) == (
        ["--folds", "5", "--study=s", "-h"],
        ["--model.lr", "0.003", "--trainer.callbacks+=a.B", "--model.x", "-1"],
    )


@pytest.mark.parametrize("tool", ["cv", "seeds"])
def test_print_config_shows_the_options_that_go_to_fit_among_the_args(tool, capsys):
    """`cv --folds 2 --model.lr 0.003 --print_config` printed `args: []`: fit's options joined them after the parse."""
    from lightning_runs import main
    from tiny_tasks import cli_main

    folds = ["--folds=2"] if tool == "cv" else []
    given = [tool, *folds, "--args=[--quiet]", "--model.lr", "0.003", "--print_config"]
    with pytest.raises(SystemExit) as exit_:
        main(cli_main, "tiny_tasks", given)
    assert exit_.value.code == 0
    assert yaml.safe_load(capsys.readouterr().out)["args"] == ["--quiet", "--model.lr", "0.003"]
    assert not Path("runs").exists()


def test_more_folds_than_samples_is_one_line_and_the_first_refused_fold_stops_the_cv(capfd, monkeypatch):
    """Each fold was a ValueError traceback, and the cv went on to the next of 30 folds."""
    from lightning_runs import main
    from tiny_tasks import cli_main

    # The cv in this process (one interpreter start less); its fold is a process of its own, writing to fd 2.
    for name in ("PYTHONPATH", "OMP_NUM_THREADS"):
        monkeypatch.setenv(name, process_environment()[name])
    with pytest.raises(SystemExit) as exit_:
        main(cli_main, "tiny_tasks", ["cv", "--folds=30", "--study=many", "--data.n", "20"])
    stderr = capfd.readouterr().err
    assert exit_.value.code == 2, stderr[-2000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert (
        errors
        == [
            "error: --data.folds 30 (fold 0): folds must be 2 to the 18 samples, fold 0 to folds - 1",
            "error: fold 0 was refused (its error is above); fix that and run the same command",
        ]
        and "Traceback" not in stderr
    ), stderr[-2000:]
    assert not Path("runs/tiny/cv-many/fold_1").exists(), "no other fold started"


def test_folds_stratify_by_classes_only_and_never_ask_more_than_the_samples_allow():
    from lightning_runs.data import fold_indices
    from lightning_runs.errors import UsageError

    targets = torch.linspace(0, 1, 40)  # a regression's: stratifying raised "Supported target types are..."
    train, val = fold_indices(40, 4, 1, seed=0, labels=targets)
    assert len(val) == 10 and sorted([*train.tolist(), *val.tolist()]) == list(range(40))
    classes = torch.tensor([0] * 30 + [1] * 10)
    assert (classes[fold_indices(40, 5, 0, seed=0, labels=classes)[1]] == 1).sum() == 2, "stratified: 2 of each 8"
    with pytest.raises(UsageError, match=r"^fold_indices\(\.\.\., folds=31\): more folds than the largest class has"):
        fold_indices(40, 31, 0, seed=0, labels=classes)
    with pytest.raises(UsageError, match=r"^fold_indices\(\.\.\., folds=41\) \(fold 0\): folds must be 2 to the 40"):
        fold_indices(40, 41, 0, seed=0)


@pytest.mark.slow
def test_a_study_continued_with_another_recipe_or_fold_count_is_refused_naming_what_differs(cv):
    """It said "2 finished, 0 to run" and printed the old table; 3 folds on a 2-fold study mixed the splits."""
    base = ["cv", "--folds=2", "--study=base", "--args=[--trainer.max_epochs=1,--trainer.limit_train_batches=2]"]
    assert cv(*base).returncode == 0
    before = snapshot()
    for changed, said in [
        (["--args=[--trainer.max_epochs=1,--trainer.limit_train_batches=2,--model.lr=0.01]"], "--model.lr 0.01 (the"
         " study: 0.05)"),
        (["--folds=3"], "--folds 3 (the study: 2)"),
    ]:  # fmt: skip
        again = cv(*base, *changed)
        errors = [line for line in again.stderr.splitlines() if line.startswith("error:")]
        assert again.returncode == 2 and len(errors) == 1 and said in errors[0], again.stderr[-2000:]
        assert errors[0].endswith("began with another recipe; give another --study for this one, or the study's to"
                                  " continue it")  # fmt: skip
    assert snapshot() == before, "nothing ran"
    assert "2 finished, 0 to run" in cv(*base).stdout
