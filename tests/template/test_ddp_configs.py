"""The example's DDP files as shipped launch one DDP run on CPU over gloo: configs/gpu.yaml with Lightning's own
launcher, configs/multinode.yaml as two torchrun nodes, scripts/slurm.sh as sbatch runs it; the example's schedule,
sized by the trainer, completes in a 2-process world. What stays the same whatever the launcher (the same numbers,
a single process's evaluations, an exact resume): lightning-runs/tests/test_ddp.py, on the library's tiny task.
"""

import os
import sys
from pathlib import Path

import pytest
from tiny_launchers import fake_srun, free_port, launch, two_nodes

from support import DEFAULT, QUIET, ROOT, ddp_environment, load, scalars, steps_per_epoch

GPU, MULTINODE = str(ROOT / "configs/gpu.yaml"), str(ROOT / "configs/multinode.yaml")
# gpu.yaml on this machine: CPU (gloo), no SyncBatchNorm (it needs CUDA), and 32-bit (16-mixed would turn into
# bf16-mixed here).
ON_CPU = ["--trainer.accelerator=cpu", "--trainer.sync_batchnorm=false", "--trainer.precision=32"]
# 1,797 digits split into 449 val, 257 test and 1,091 train (none divisible by 2 ranks), in batches of 32: a short
# fit (test_slurm.py runs the same).
TINY_DATA = {"val_fraction": 0.25, "test_fraction": 0.143, "batch_size": 32}
TINY = [*QUIET, *(f"--data.{key}={value}" for key, value in TINY_DATA.items())]
TINY_TWO_EPOCHS = [*TINY, "--trainer.max_epochs=2"]  # after the configs: a later --config would override them
# 1,091 train samples padded to 2 x 546: 17 full batches per rank and epoch.
STEPS = 2 * steps_per_epoch(world_size=2, **TINY_DATA)


def project(*args: str) -> list[str]:
    return [sys.executable, "-m", "project", *args]


def with_lightning(home: Path) -> list[str]:
    fit = project("fit", "--config", DEFAULT, "--config", GPU, *ON_CPU, *TINY_TWO_EPOCHS, "--trainer.devices=2")
    return launch(home, fit, env=ddp_environment())


def as_two_nodes(home: Path) -> list[str]:
    configs = ["--config", DEFAULT, "--config", GPU, "--config", MULTINODE]
    nodes = two_nodes(["-m", "project", "fit", *configs, *ON_CPU, *TINY_TWO_EPOCHS])
    return launch(home, *nodes, env=ddp_environment())


def slurm_job(home: Path, tasks: int = 2, **variables: str) -> dict[str, str]:
    """The environment sbatch gives scripts/slurm.sh for a 1-node job of `tasks` tasks (job 4242 unless
    `variables` say otherwise), with a stand-in srun on the PATH and the job's working directory `home`."""
    bin_folder = fake_srun(home)
    if not (home / "configs").exists():
        (home / "configs").symlink_to(ROOT / "configs")  # the script is submitted from the repository root
    job = {
        "SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "digits", "SLURM_NTASKS": str(tasks),
        "SLURM_NTASKS_PER_NODE": str(tasks), "SLURM_NNODES": "1", "SLURM_JOB_NUM_NODES": "1",
        "SLURM_NODELIST": "127.0.0.1",
        "MASTER_PORT": str(free_port()),  # else derived from the job id: could collide with a parallel test
    }  # fmt: skip
    path = f"{bin_folder}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    return ddp_environment(PATH=path, **{**job, **variables})


def with_slurm(home: Path) -> list[str]:
    """scripts/slurm.sh as sbatch runs it for a 1-node, 2-task job, with a stand-in srun on the PATH."""
    script = ["bash", str(ROOT / "scripts/slurm.sh"), *ON_CPU, *TINY_TWO_EPOCHS]
    return launch(home, script, env=slurm_job(home))


LAUNCHERS = {"lightning": with_lightning, "two_nodes": as_two_nodes, "slurm": with_slurm}


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """The same 2-epoch fit under each launcher: its run folder and everything the processes printed."""
    results = {}
    for name, launcher in LAUNCHERS.items():
        home = tmp_path_factory.mktemp(name)
        folder = "slurm-4242" if name == "slurm" else "version_0"  # scripts/slurm.sh names the run for its job
        results[name] = home / "runs/digits" / folder, "\n".join(launcher(home))
    return results


@pytest.mark.slow
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_each_shipped_launch_ends_with_one_run_written_once_by_rank_zero(launched, launcher):
    run_dir, output = launched[launcher]
    assert "GLOBAL_RANK: 0, MEMBER: 1/2" in output and "GLOBAL_RANK: 1, MEMBER: 2/2" in output
    assert [p.name for p in run_dir.parent.iterdir()] == [run_dir.name], "one run folder for all ranks"
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 1
    assert sorted(p.name for p in run_dir.glob("*.yaml")) == ["config.yaml", "hparams.yaml"]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["best.ckpt", "last.ckpt"]
    assert not [p for p in run_dir.rglob("*-[0-9]*.*")], "no second copy of any file (free_path's -N names)"
    assert load(run_dir / "checkpoints/last.ckpt")["global_step"] == STEPS, "steps of a 2-process world"
    assert [step for step, _ in scalars(run_dir, "train/loss")] == list(range(STEPS)), "each step logged once"


@pytest.mark.slow
def test_the_examples_learning_rate_schedule_completes_under_ddp(launched):
    # The total step count is derived from the 2-process world: after the final step the LR sits at min_lr.
    scheduler = load(launched["lightning"][0] / "checkpoints/last.ckpt")["lr_schedulers"][0]
    assert scheduler["last_epoch"] == STEPS
    assert scheduler["_last_lr"] == pytest.approx([1e-5, 1e-5], abs=1e-12)
