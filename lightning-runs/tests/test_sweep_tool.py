"""`python -m <package> sweep`: trials as normal runs of the study's name (runs/sweeps/<study>/version_N), each its own
process, a resumable study in runs/sweeps/ that many workers share, failures, stopped workers and pruning recorded;
trials scored as their best checkpoint is chosen. On the tiny task, whose trials are `python -m tiny_tasks fit`
(tiny_tasks.py's __main__)."""

import json
import os
import signal
from pathlib import Path

import optuna
import pytest
import torch
import yaml
from optuna.trial import TrialState
from tiny_runs import QUIET, assert_kept, printed_once, process_environment, refusal, snapshot, start, wait_for

from lightning_runs.tools import sweep as sweep_tool
from tiny_tasks import cli_main

# 192 training points: 6 batches of 32 at most, so that 5 a trial are 5 steps an epoch.
SPACE = {"model.lr": {"low": 1e-3, "high": 0.1, "log": True}, "data.batch_size": {"low": 16, "high": 32}}
# Tiny trials: 2 epochs of 5 batches, and pruning from the second trial on.
TRIALS = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=5", *QUIET]
TINY = [*TRIALS, "--pruning_startup_trials=1", "--pruning_warmup_epochs=0"]  # fit's options, as fit takes them
# MedianPruner prunes once n_startup_trials trials are complete, whichever ran first: more than any test here runs (the
# default 5 let the sixth of six trials, run by four workers, be pruned).
NO_PRUNING = ["--pruning_startup_trials=1000"]


@pytest.fixture(scope="module", autouse=True)
def trials_see_this_checkout():
    """Each trial is a `python -m tiny_tasks fit` process: it imports this checkout and tiny_tasks' class paths, one
    thread each, as the workers started below as processes do."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("PYTHONPATH", "OMP_NUM_THREADS"):
            patch.setenv(name, process_environment()[name])
        yield


def study_config() -> str:
    """The sweep's file, <study>.yaml: the space alone (the study's name is given by --study)."""
    Path("space.yaml").write_text(yaml.safe_dump({"space": SPACE}))
    return "space.yaml"


def sweep(*args: str, cli=cli_main) -> optuna.Study:
    """`python -m tiny_tasks sweep --config space.yaml <args>` with tiny trials, in this process (`cli`: tiny_tasks'
    cli_main, or tiny_runs.printed_once)."""
    return sweep_tool.main(cli, ["--config", study_config(), *TINY, *args])


def start_worker(*args: str):
    """`python -m tiny_tasks sweep --config space.yaml <args>` with tiny trials, as a process of its own."""
    return start("sweep", "--config", study_config(), *TINY, *args)


def open_study(name: str) -> optuna.Study:
    """The study file a sweep named `name` keeps (its journal), opened with Optuna directly."""
    Path("runs/sweeps").mkdir(parents=True, exist_ok=True)
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(f"runs/sweeps/{name}.journal"))
    return optuna.create_study(storage=storage, study_name=name, direction="minimize", load_if_exists=True)


def trial_processes(worker: int) -> list[int]:
    """The processes a worker started (its running trial's `python -m tiny_tasks fit`)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()  # after the command name, which may hold spaces
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == worker:  # the parent's pid
            pids.append(int(stat.parent.name))
    return pids


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"  # ended, not yet reaped
    except OSError:
        return True


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """Three trials of the space: the first fails (a batch size its DataLoader refuses), the third learns far too
    slowly."""
    home = tmp_path_factory.mktemp("swept")
    previous = Path.cwd()
    os.chdir(home)
    try:
        queued = open_study("tiny")
        for params in ({"data.batch_size": 0}, {"model.lr": 0.05}, {"model.lr": 1e-5}):
            queued.enqueue_trial(params)  # the other values are sampled
        study = sweep("--study=tiny", "--n_trials=3")
    finally:
        os.chdir(previous)
    return home, study


@pytest.mark.slow
def test_a_sweep_keeps_its_study_in_runs_and_runs_each_trial_as_a_normal_run(swept):
    home, study = swept
    assert (home / "runs/sweeps/tiny.journal").is_file()
    assert isinstance(study.sampler, optuna.samplers.TPESampler)
    # Each trial ran as a run of the study's name, runs/sweeps/tiny/version_N, the failed one too.
    assert [t.user_attrs["run"] for t in study.trials] == [f"runs/sweeps/tiny/version_{n}" for n in range(3)]
    assert sorted(p.name for p in (home / "runs/sweeps/tiny").iterdir()) == ["version_0", "version_1", "version_2"]
    for trial in study.trials:
        config = yaml.safe_load((home / trial.user_attrs["run"] / "config.yaml").read_text())
        assert config["model"]["init_args"]["lr"] == trial.params["model.lr"]
        assert config["data"]["init_args"]["batch_size"] == trial.params["data.batch_size"]
        # The storage reaches the trial's fit through its environment: a server's URL may hold a password.
        assert "tiny.journal" not in (home / trial.user_attrs["run"] / "config.yaml").read_text()


@pytest.mark.slow
def test_a_failing_trial_is_recorded_as_failed_and_the_sweep_goes_on(swept):
    _, study = swept
    assert study.trials[0].state == TrialState.FAIL
    assert study.trials[0].params["data.batch_size"] == 0
    assert study.best_trial.number == 1


@pytest.mark.slow
def test_a_trial_trailing_the_median_is_pruned_and_a_complete_one_scores_its_best_epoch(swept):
    home, study = swept
    complete, pruned = study.trials[1], study.trials[2]
    assert (complete.state, pruned.state) == (TrialState.COMPLETE, TrialState.PRUNED)
    assert list(pruned.intermediate_values) == [0], "pruned after its first validation"
    assert pruned.intermediate_values[0] > complete.intermediate_values[0]  # val/loss: lower is better
    best = torch.load(home / complete.user_attrs["run"] / "checkpoints/best.ckpt", weights_only=True)
    # The checkpoint callback that monitors val/loss (early stopping watches it too, and keeps no best_model_score).
    (best_score,) = (
        v["best_model_score"] for k, v in best["callbacks"].items() if "'val/loss'" in k and "best_model_score" in v
    )
    assert complete.value == min(complete.intermediate_values.values()) == pytest.approx(best_score.item())


@pytest.mark.slow
def test_a_diverging_trial_fails_alone_instead_of_stopping_the_sweep(capfd):
    # The model's loss turns NaN at step 2: the run stops with exit code 1, the code Ctrl-C also gets.
    space = {"model.lr": {"low": 0.01, "high": 0.1}}
    args = ["--trainer.max_epochs=1", "--model=tiny_tasks.NaNAfter", "--model.step=2", *QUIET]
    Path("nan.yaml").write_text(yaml.safe_dump({"study": "diverging", "space": space, "args": args}))
    with pytest.raises(SystemExit) as exit:  # every trial failed: the sweep did not do its job
        sweep_tool.main(cli_main, ["--config", "nan.yaml", "--n_trials=2"])
    assert exit.value.code == 1
    study = open_study("diverging")
    assert [t.state for t in study.trials] == [TrialState.FAIL, TrialState.FAIL]
    assert not any(t.user_attrs.get("interrupted") for t in study.trials)
    assert capfd.readouterr().err.count("step 2: the loss or its gradients are NaN/Inf") == 2  # the trials' own


@pytest.mark.slow
def test_an_interrupted_sweep_continues_when_the_same_command_runs_again():
    # Trials of 30 epochs: the second is still running when its first epoch's checkpoint appears.
    long = ["--trainer.max_epochs=30", "--trainer.limit_train_batches=5", *QUIET]
    worker = start_worker("--study=resumable", "--n_trials=2", *NO_PRUNING, *long)
    wait_for(lambda: Path("runs/sweeps/resumable/version_1/checkpoints/last.ckpt").exists(), what="the second trial")
    trial = trial_processes(worker.pid)
    worker.send_signal(signal.SIGINT)  # Ctrl-C: the worker passes it on to the trial it runs
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 130, err[-3000:]
    assert err.strip().splitlines()[-1] == "Interrupted: run the same command again to continue the study."
    assert "Traceback" not in err, "Optuna's traceback of the stop, which said nothing the lines do not"
    assert "stopped by Ctrl-C at step" in err, "the trial saved its last checkpoint and said so"
    assert all(gone(pid) for pid in trial)
    states = [t.state for t in open_study("resumable").trials]
    assert states == [TrialState.COMPLETE, TrialState.FAIL]

    study = sweep("--study=resumable", "--n_trials=2", *NO_PRUNING, *long)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.COMPLETE]
    assert study.trials[1].user_attrs["interrupted"], "recorded as cut short, so it does not count"
    finished = sweep("--study=resumable", "--n_trials=2", *NO_PRUNING, *long)
    assert len(finished.trials) == 3, "a finished study runs nothing more"
    assert len(list(Path("runs/sweeps/resumable").iterdir())) == 3


@pytest.mark.slow
def test_a_trial_stopped_after_its_last_epoch_counts_as_complete_and_the_worker_stops_with_its_line(capfd):
    # SIGTERM as the last epoch's validation begins (2 epochs of 5 steps): the fit ends with that epoch, exit 143.
    stop = ["--trainer.callbacks+=lightning_runs.testing.SignalAt", "--trainer.callbacks.step=10"]
    args = [*TRIALS, *stop, "--trainer.callbacks.phase=validation"]
    with pytest.raises(SystemExit) as exit_:
        sweep("--study=late", "--n_trials=2", *NO_PRUNING, "--args", json.dumps(args))
    err = capfd.readouterr().err  # the trial's lines too: a process of its own
    assert exit_.value.code == 143 and "the run had finished its last epoch" in err, err[-3000:]
    assert err.strip().splitlines()[-1] == "Interrupted: run the same command again to continue the study."
    (trial,) = open_study("late").trials  # the worker stopped after it: no second trial
    assert trial.state == TrialState.COMPLETE and "interrupted" not in trial.user_attrs
    assert trial.value == min(trial.intermediate_values.values())


@pytest.mark.slow
def test_a_sweep_whose_every_trial_failed_exits_1_and_the_same_command_retries_them_once_fixed(capsys):
    def space(low: int, high: int) -> None:
        Path("batches.yaml").write_text(yaml.safe_dump({"space": {"data.batch_size": {"low": low, "high": high}}}))

    command = ["--config", "batches.yaml", *TINY, *NO_PRUNING, "--study=batches", "--n_trials=2"]
    space(-8, -1)  # a batch size no DataLoader takes: every trial is refused
    error = refusal(capsys, lambda: sweep_tool.main(cli_main, command), code=1)
    assert "all 2 trials failed" in error and "retries them" in error

    space(16, 32)  # fixed
    study = sweep_tool.main(cli_main, command)
    states = [trial.state for trial in study.trials]
    assert states == [TrialState.FAIL, TrialState.FAIL, TrialState.COMPLETE, TrialState.COMPLETE]
    assert len(sweep_tool.main(cli_main, command).trials) == 4, "finished: nothing more to run"


@pytest.mark.parametrize(
    "name,content,said",
    [
        ("broken.db", b"SQLite format 2\0" + bytes(range(256)) * 8, "not a readable study (file is not a database)"),
        ("broken.journal", b'{"op_code": 99, "worker_id": "w"}\n', "not a readable study ("),  # an unknown operation
    ],
    ids=["database", "journal"],
)
def test_a_corrupt_study_file_is_one_line_and_stays_as_it_was(name, content, said, capsys):
    study = Path("runs/sweeps", name)
    study.parent.mkdir(parents=True)
    study.write_bytes(content)
    study_config()  # the sweep's file, written before the snapshot (it is written again, the same)
    before = snapshot()
    error = refusal(capsys, lambda: sweep("--study=broken", cli=printed_once))  # the refusal follows that parse
    assert error.startswith(f"error: {study.resolve()}: {said}") and error.endswith("; move it away to start afresh")
    assert not assert_kept(before, snapshot())


@pytest.mark.slow
def test_a_trial_scored_by_cross_validation_is_its_folds_mean():
    study = sweep("--study=folded", "--n_trials=2", "--folds=2", *NO_PRUNING)
    runs = sorted(Path("runs/sweeps/folded").glob("version_*"))
    assert len(runs) == 4  # two fits a trial, one a fold
    for trial in study.trials:
        assert trial.state == TrialState.COMPLETE
        bests = [min(v for step, v in trial.intermediate_values.items() if step // 1_000_000 == k) for k in (0, 1)]
        assert trial.value == pytest.approx(sum(bests) / 2)
    folds = {(c["data"]["init_args"]["folds"], c["data"]["init_args"]["fold"]) for c in map(run_config, runs)}
    assert folds == {(2, 0), (2, 1)}


def run_config(run: Path) -> dict:
    return yaml.safe_load((run / "config.yaml").read_text())


def test_cross_validated_trials_need_a_datamodule_that_takes_folds(capsys):
    from tiny_regression import regression_cli_main

    from lightning_runs import main

    args = ["sweep", "--study=s", "--config", study_config(), "--folds=2"]
    line = refusal(capsys, lambda: main(regression_cli_main, "tiny_regression", args))
    assert "takes no folds and fold arguments" in line
