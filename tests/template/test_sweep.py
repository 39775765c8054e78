"""`python -m project sweep`: trials as normal runs, each its own process, a resumable study in runs/ that many
workers share, failures, killed workers and pruning recorded."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

import lightning_runs.tools.sweep
from lightning_runs.tools.sweep import main
from project.cli import cli_main
from support import DEFAULT, QUIET, ROOT, ddp_environment, load, wait_for, working_directory

SWEEPS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "sweeps").glob("*.yaml"))
# The shipped space, with tiny trials: 2 epochs of 5 batches, and pruning from the second trial on.
TINY = [
    "--configs", json.dumps([DEFAULT]),
    "--args", json.dumps(["--trainer.max_epochs=2", "--trainer.limit_train_batches=5", *QUIET]),
    "--pruning_startup_trials=1", "--pruning_warmup_epochs=0",
]  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def trials_see_this_checkout():
    """Each trial is a `python -m project fit` process: it imports this checkout and the tests' class paths
    (`support.NaNAfter`), one thread each, as the workers started below as processes do."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("PYTHONPATH", "OMP_NUM_THREADS"):
            patch.setenv(name, ddp_environment()[name])
        yield


def sweep(*args: str) -> optuna.Study:
    """`python -m project sweep --config sweeps/digits.yaml <args>` with tiny trials."""
    return sweep_with(cli_main, *args)


def sweep_with(project_cli, *args: str) -> optuna.Study:
    return main(project_cli, ["--config", str(ROOT / "sweeps/digits.yaml"), *TINY, *args])


def open_study(name: str) -> optuna.Study:
    """The study file a sweep named `name` keeps (its journal), opened with Optuna directly."""
    Path("runs/sweeps").mkdir(parents=True, exist_ok=True)
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(f"runs/sweeps/{name}.journal"))
    return optuna.create_study(storage=storage, study_name=name, direction="maximize", load_if_exists=True)


@pytest.mark.parametrize("path", SWEEPS)
def test_every_sweep_file_says_how_to_run_it_and_names_real_options(path, capsys):
    assert (ROOT / path).read_text().splitlines()[0].startswith(f"# python -m project sweep --config {path}")
    with pytest.raises(SystemExit):
        main(cli_main, ["--config", str(ROOT / path), "--print_config"])
    space = yaml.safe_load(capsys.readouterr().out)["space"]
    # Each option of the space, at its low end, is accepted by `python -m project fit`.
    overrides = [
        f"--{key}={values['low'] if 'low' in values else values['choices'][0]}" for key, values in space.items()
    ]
    with pytest.raises(SystemExit) as exit:
        cli_main(["fit", "--config", DEFAULT, *overrides, "--print_config"])
    assert exit.value.code in (0, None)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """Three trials of the shipped space: the first refuses its dropout, the third learns far too slowly."""
    home = tmp_path_factory.mktemp("swept")
    with working_directory(home):
        queued = open_study("tiny")
        for params in ({"model.network.dropout": 1.5}, {"model.lr": 0.05}, {"model.lr": 1e-5}):
            queued.enqueue_trial(params)  # the other values are sampled
        study = sweep("--study=tiny", "--n_trials=3")
    return home, study


@pytest.mark.slow
def test_a_sweep_keeps_its_study_in_runs_and_runs_each_trial_as_a_normal_run(swept):
    home, study = swept
    assert (home / "runs/sweeps/tiny.journal").is_file()
    assert isinstance(study.sampler, optuna.samplers.TPESampler)
    # The refused trial left no folder behind; the two others each ran as runs/sweeps/tiny/version_N.
    assert "run" not in study.trials[0].user_attrs
    assert sorted(p.name for p in (home / "runs/sweeps/tiny").iterdir()) == ["version_0", "version_1"]
    for trial in study.trials[1:]:
        config = yaml.safe_load((home / trial.user_attrs["run"] / "config.yaml").read_text())
        assert config["model"]["init_args"]["lr"] == trial.params["model.lr"]
        assert config["data"]["init_args"]["batch_size"] == trial.params["data.batch_size"]


@pytest.mark.slow
def test_a_failing_trial_is_recorded_as_failed_and_the_sweep_goes_on(swept):
    _, study = swept
    assert study.trials[0].state == TrialState.FAIL
    assert study.trials[0].params["model.network.dropout"] == 1.5
    assert study.best_trial.number == 1


@pytest.mark.slow
def test_a_trial_trailing_the_median_is_pruned_and_a_complete_one_scores_its_best_epoch(swept):
    home, study = swept
    complete, pruned = study.trials[1], study.trials[2]
    assert (complete.state, pruned.state) == (TrialState.COMPLETE, TrialState.PRUNED)
    assert list(pruned.intermediate_values) == [0], "pruned after its first validation"
    assert pruned.intermediate_values[0] < complete.intermediate_values[0]
    best = load(home / complete.user_attrs["run"] / "checkpoints/best.ckpt")
    best_score = next(v for k, v in best["callbacks"].items() if "'val/acc'" in k)["best_model_score"]
    assert complete.value == max(complete.intermediate_values.values()) == pytest.approx(best_score.item())


NO_PRUNING = ["--pruning_startup_trials=5"]


@pytest.mark.slow
def test_a_diverging_trial_fails_alone_instead_of_stopping_the_sweep(capfd):
    # The network turns its outputs to NaN at step 2: the run stops with exit code 1, the code Ctrl-C also gets.
    space = {"model.lr": {"low": 0.01, "high": 0.1}}
    args = ["--trainer.max_epochs=1", "--model.network=support.NaNAfter", "--model.network.step=2", *QUIET]
    Path("nan.yaml").write_text(yaml.safe_dump({"study": "diverging", "space": space, "args": args}))
    with pytest.raises(SystemExit) as exit:  # every trial failed: the sweep did not do its job
        main(cli_main, ["--config", "nan.yaml", "--configs", json.dumps([DEFAULT]), "--n_trials=2"])
    assert exit.value.code == 1
    study = open_study("diverging")
    assert [t.state for t in study.trials] == [TrialState.FAIL, TrialState.FAIL]
    assert not any(t.user_attrs.get("interrupted") for t in study.trials)
    assert capfd.readouterr().err.count("step 2: the loss or its gradients are NaN/Inf") == 2  # the trials' own


def start_worker(*args: str) -> subprocess.Popen:
    """`python -m project sweep --config sweeps/digits.yaml <args>` with tiny trials, as a process of its own."""
    command = [sys.executable, "-m", "project", "sweep", "--config", str(ROOT / "sweeps/digits.yaml"), *TINY, *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ddp_environment())


def trial_processes(worker: int) -> list[int]:
    """The processes a worker started (its running trial's `python -m project fit`)."""
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


@pytest.mark.slow
def test_an_interrupted_sweep_continues_when_the_same_command_runs_again():
    worker = start_worker("--study=resumable", "--n_trials=2", *NO_PRUNING)
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

    study = sweep("--study=resumable", "--n_trials=2", *NO_PRUNING)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.COMPLETE]
    assert study.trials[1].user_attrs["interrupted"], "recorded as cut short, so it does not count"
    assert len(sweep("--study=resumable", "--n_trials=2", *NO_PRUNING).trials) == 3, (
        "a finished study runs nothing more"
    )
    assert len(list(Path("runs/sweeps/resumable").iterdir())) == 3


@pytest.mark.slow
def test_a_trial_stopped_after_its_last_epoch_counts_as_complete_and_the_worker_stops_with_its_line(capfd):
    # SIGTERM as the last epoch's validation begins (2 epochs of 5 steps): the fit ends with that epoch, exit 143.
    stop = [
        "--trainer.callbacks+=support.SignalAt",
        "--trainer.callbacks.step=10",
        "--trainer.callbacks.phase=validation",
    ]
    args = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=5", *QUIET, *stop]
    with pytest.raises(SystemExit) as exit_:
        sweep("--study=late", "--n_trials=2", *NO_PRUNING, "--args", json.dumps(args))
    err = capfd.readouterr().err  # the trial's lines too: a process of its own
    assert exit_.value.code == 143 and "the run had finished its last epoch" in err, err[-3000:]
    assert err.strip().splitlines()[-1] == "Interrupted: run the same command again to continue the study."
    (trial,) = open_study("late").trials  # the worker stopped after it: no second trial
    assert trial.state == TrialState.COMPLETE and "interrupted" not in trial.user_attrs
    assert trial.value == max(trial.intermediate_values.values())


def test_a_sweep_scores_trials_as_their_best_checkpoint_is_chosen_unless_told():
    assert lightning_runs.tools.sweep._monitored(cli_main, (DEFAULT,), ()) == ("val/acc", "max"), "the shipped recipe's"
    assert lightning_runs.tools.sweep._monitored(
        cli_main, (), ("--checkpoint.monitor=val/loss", "--checkpoint.mode=min")
    ) == (
        "val/loss",
        "min",
    )


# Stands in for srun in a one-task step: records the command it was given, then runs it with a task's variables.
FAKE_SRUN = """#!/bin/bash
echo "$@" >> srun.log
SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 exec "$@"
"""
ON_CPU = ["--trainer.accelerator=cpu", "--trainer.precision=32", "--trainer.sync_batchnorm=false"]  # for gpu.yaml


@pytest.mark.slow
def test_the_slurm_array_script_starts_a_worker_whose_trials_are_srun_steps():
    Path("bin").mkdir()
    Path("bin/srun").write_text(FAKE_SRUN)
    Path("bin/srun").chmod(0o755)
    for name in ("configs", "sweeps"):  # the script is submitted from the repository root
        Path(name).symlink_to(ROOT / name)
    task = {
        "SLURM_JOB_ID": "4242", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NAME": "digits-sweep", "SLURM_NTASKS": "1",
        "SLURM_NTASKS_PER_NODE": "1", "SLURM_NNODES": "1", "SLURM_JOB_NUM_NODES": "1", "SLURM_NODELIST": "127.0.0.1",
        "SLURM_CPUS_PER_TASK": "1",
    }  # fmt: skip
    task["PATH"] = f"{Path('bin').resolve()}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    args = ["--args", json.dumps([*ON_CPU, "--trainer.max_epochs=1", "--trainer.limit_train_batches=2", *QUIET])]
    script = ["bash", str(ROOT / "scripts/sweep-array.sh"), "--n_trials=1", *args]
    result = subprocess.run(script, capture_output=True, text=True, timeout=600, env=ddp_environment(**task))
    assert result.returncode == 0, result.stderr[-3000:]
    (trial,) = open_study("digits").trials
    assert trial.state == TrialState.COMPLETE
    (step,) = Path("srun.log").read_text().splitlines()
    assert " -m project fit --config=configs/digits.yaml --config=configs/gpu.yaml " in step
