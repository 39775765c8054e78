"""The example's sweep, end to end: every shipped sweep file says how to run it and names real options of `python -m
project fit`, it scores trials as the recipe chooses its best checkpoint, and the SLURM array script starts a worker
whose trials are srun steps. How a sweep runs, stops, resumes and shares its study is the library's to test
(lightning-runs/tests/test_sweep_tool.py, test_sweep_storages.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from lightning_runs.tools.fits import fit_config
from lightning_runs.tools.sweep import main, scored_by

from project.cli import cli_main

from support import DEFAULT, QUIET, ROOT, ddp_environment

SWEEPS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "sweeps").glob("*.yaml"))


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


def test_the_shipped_sweep_scores_trials_as_the_recipe_chooses_its_best_checkpoint():
    resolved = fit_config(cli_main, (f"--config={DEFAULT}",))
    assert scored_by(resolved, None, None) == ("val/acc", "maximize")


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
