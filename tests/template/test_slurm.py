"""scripts/slurm.sh under a simulated SLURM: SIGTERM before the time limit saves, requeues the same job once, and
the requeued job resumes its own run folder bit-exactly; a failure or a scancel ends the job without a requeue.

The job runs as sbatch would run it: the script under bash in the job's working directory, SLURM's variables
set, and stand-ins for srun (test_ddp_configs': one task per SLURM_NTASKS) and for scontrol, which records its calls.
"""

import subprocess
from pathlib import Path

import pytest
from test_ddp_configs import ON_CPU, TINY, TINY_DATA, slurm_job

from support import ROOT, assert_same_checkpoint, load, scalars, steps_per_epoch

FAKE_SCONTROL = """#!/bin/bash
# Stands in for scontrol: one line per call, its arguments.
echo "$*" >> "$(dirname "$0")/../scontrol.calls"
"""
STEPS = 2 * steps_per_epoch(world_size=2, **TINY_DATA)  # 2 epochs of 17 steps on each of 2 tasks
SIGNAL_AT = 5  # SIGTERM as step 5 begins: the stop, and last.ckpt, at step 6, mid-epoch
FIT = [*ON_CPU, *TINY, "--trainer.max_epochs=2"]


def sbatch(home: Path, *args: str, tasks: int = 2, session: bool = False, **variables: str):
    """Runs scripts/slurm.sh `args` as job 4242's batch script would run (in a session of its own with `session`:
    the process group a simulated scancel signals)."""
    env = slurm_job(home, tasks, **variables)
    (home / "bin/scontrol").write_text(FAKE_SCONTROL)
    (home / "bin/scontrol").chmod(0o755)
    script = ["bash", str(ROOT / "scripts/slurm.sh"), *args]
    done = subprocess.run(
        script, cwd=home, env=env, capture_output=True, text=True, timeout=600, start_new_session=session
    )
    calls = home / "scontrol.calls"
    return done, (calls.read_text().splitlines() if calls.exists() else [])


def signal_at(step: int, helper: str = "SignalAt") -> list[str]:
    return [f"--trainer.callbacks+=support.{helper}", f"--trainer.callbacks.step={step}"]


@pytest.mark.slow
def test_sigterm_before_the_time_limit_requeues_the_job_which_resumes_its_run_exactly(tmp_path):
    reference_home, home = tmp_path / "reference", tmp_path / "preempted"
    for folder in (reference_home, home):
        folder.mkdir()
    done, calls = sbatch(reference_home, *FIT)
    assert done.returncode == 0 and calls == [], done.stderr[-3000:]

    # SLURM's --signal reaches every task at once: each sends itself SIGTERM at the same step.
    stopped, calls = sbatch(home, *FIT, *signal_at(SIGNAL_AT))
    run = home / "runs/digits/slurm-4242"
    assert stopped.returncode == 143, stopped.stderr[-3000:]
    assert f"stopped by SIGTERM at step {SIGNAL_AT + 1}" in stopped.stderr
    assert calls == ["requeue 4242"], "the batch script requeues the job once, and Lightning does not also"
    assert load(run / "checkpoints/last.ckpt")["global_step"] == SIGNAL_AT + 1

    # The requeued job: the same script, arguments and job id, started again by SLURM.
    resumed, calls = sbatch(home, *FIT, *signal_at(SIGNAL_AT), SLURM_RESTART_COUNT="1")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert calls == ["requeue 4242"], "no second requeue once the run finished"
    assert f"fit resumes {run.relative_to(home)} from last.ckpt (step {SIGNAL_AT + 1})" in resumed.stdout
    assert [p.name for p in (home / "runs/digits").iterdir()] == ["slurm-4242"], "one run folder for both attempts"
    assert not list(home.rglob("hpc_ckpt_*")), "no checkpoint of Lightning's own SLURM requeue"
    reference = reference_home / "runs/digits/slurm-4242"
    final = load(run / "checkpoints/last.ckpt")
    assert final["global_step"] == STEPS
    assert_same_checkpoint(load(reference / "checkpoints/last.ckpt"), final)
    # The same TensorBoard run, continued: the second attempt's steps follow the first's in that folder.
    expected = dict(scalars(reference, "train/loss"))
    logged = [(step, value) for step, value in scalars(run, "train/loss") if step > SIGNAL_AT]
    assert [step for step, _ in logged] == list(range(SIGNAL_AT + 1, STEPS))
    assert all(value == expected[step] for step, value in logged)
    assert len(list(run.glob("events.out.tfevents.*"))) == 2


@pytest.mark.slow
def test_a_run_that_fails_is_not_requeued(tmp_path):
    done, calls = sbatch(tmp_path, *FIT, "--trainer.callbacks+=support.CrashAt", "--trainer.callbacks.step=2", tasks=1)
    assert done.returncode == 1 and "RuntimeError" in done.stderr, done.stderr[-3000:]
    assert calls == []


@pytest.mark.slow
def test_scancel_ends_the_job_without_a_requeue(tmp_path):
    # scancel sends SIGTERM to every process of the job, the batch script too: the run still saves and stops.
    done, calls = sbatch(tmp_path, *FIT, *signal_at(SIGNAL_AT, "ScancelAt"), tasks=1, session=True)
    assert done.returncode == 143, done.stderr[-3000:]
    assert "stopped by SIGTERM" in done.stderr and (tmp_path / "runs/digits/slurm-4242/checkpoints/last.ckpt").is_file()
    assert calls == []
