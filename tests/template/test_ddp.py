"""DDP on CPU over gloo, launched as users launch it: by Lightning, by torchrun, as two nodes, and by SLURM.

Each launcher must end with one run written once by rank zero and the same numbers as the others, and those
numbers must equal a single process evaluating the same checkpoint.
"""

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import torch

from support import DEFAULT, QUIET, ROOT, ddp_environment, free_port, load, run, scalars, steps_per_epoch

GPU, MULTINODE = str(ROOT / "configs/gpu.yaml"), str(ROOT / "configs/multinode.yaml")
# gpu.yaml on this machine: CPU (gloo), no SyncBatchNorm (it needs CUDA), and 32-bit, so that evaluations can be
# compared exactly (16-mixed would turn into bf16-mixed here).
ON_CPU = ["--trainer.accelerator=cpu", "--trainer.sync_batchnorm=false", "--trainer.precision=32"]
# 1,797 digits split into 449 val, 257 test and 1,091 train: none divisible by 2 ranks. The val shards of 225 and
# 224 samples are 8 and 7 batches of 32, the test shards of 129 and 128 are 5 and 4: one rank has an extra batch.
TINY_DATA = {"val_fraction": 0.25, "test_fraction": 0.143, "batch_size": 32}
TINY = [*QUIET, *(f"--data.{key}={value}" for key, value in TINY_DATA.items())]
TINY_TWO_EPOCHS = [*TINY, "--trainer.max_epochs=2"]  # after the configs: a later --config would override them
# 1,091 train samples padded to 2 x 546: 17 full batches per rank and epoch.
STEPS = 2 * steps_per_epoch(world_size=2, **TINY_DATA)
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}  # float32 sums in a different order; accuracies must match exactly
FAKE_SRUN = """#!/bin/bash
# Stands in for srun on one node: SLURM_NTASKS copies of the command, each with the variables srun gives a task.
pids=()
for ((task = 0; task < SLURM_NTASKS; task++)); do
    SLURM_PROCID=$task SLURM_LOCALID=$task SLURM_NODEID=0 "$@" &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
"""


def launch(home: Path, *commands: list[str], env: dict | None = None, timeout: float = 600) -> list[str]:
    """Start the commands together (one per node), wait for all, assert that all exit 0; their outputs."""
    logs = [home / f"launch-{i}.log" for i in range(len(commands))]
    procs = []
    for command, log in zip(commands, logs, strict=True):
        with log.open("w") as out:
            procs.append(subprocess.Popen(command, cwd=home, env=env or ddp_environment(), stdout=out, stderr=out))
    try:
        for proc in procs:
            proc.wait(timeout=timeout)  # only against a hang: a run takes well under a minute
    finally:
        for proc in procs:
            if proc.poll() is None:
                for child in [*psutil.Process(proc.pid).children(recursive=True), proc]:
                    child.kill()
                proc.wait()
    outputs = [log.read_text() for log in logs]
    for proc, output in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, output[-4000:]
    return outputs


def project(*args: str) -> list[str]:
    return [sys.executable, "-m", "project", *args]


def torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]  # what the `torchrun` script runs


def with_lightning(home: Path) -> list[str]:
    fit = project("fit", "--config", DEFAULT, "--config", GPU, *ON_CPU, *TINY_TWO_EPOCHS, "--trainer.devices=2")
    return launch(home, fit)


def with_torchrun(home: Path) -> list[str]:
    fit = ["-m", "project", "fit", "--config", DEFAULT, "--config", GPU, *ON_CPU, *TINY_TWO_EPOCHS]
    return launch(home, torchrun("--standalone", "--nproc_per_node=2", *fit, "--trainer.devices=2"))


def as_two_nodes(home: Path) -> list[str]:
    """Two torchrun agents on one machine, as on two nodes: one process each, meeting at node 0's address."""
    configs = ["--config", DEFAULT, "--config", GPU, "--config", MULTINODE]
    fit = ["-m", "project", "fit", *configs, *ON_CPU, *TINY_TWO_EPOCHS]
    port = free_port()
    nodes = [
        torchrun("--nnodes=2", f"--node_rank={node}", "--nproc_per_node=1", "--master_addr=127.0.0.1",
                 f"--master_port={port}", *fit, "--trainer.devices=1")
        for node in (0, 1)
    ]  # fmt: skip
    return launch(home, *nodes)


def slurm_job(home: Path, tasks: int = 2, **variables: str) -> dict[str, str]:
    """The environment sbatch gives scripts/slurm.sh for a 1-node job of `tasks` tasks (job 4242 unless
    `variables` say otherwise), with a stand-in srun on the PATH and the job's working directory `home`."""
    (home / "bin").mkdir(exist_ok=True)
    (home / "bin/srun").write_text(FAKE_SRUN)
    (home / "bin/srun").chmod(0o755)
    if not (home / "configs").exists():
        (home / "configs").symlink_to(ROOT / "configs")  # the script is submitted from the repository root
    job = {
        "SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "digits", "SLURM_NTASKS": str(tasks),
        "SLURM_NTASKS_PER_NODE": str(tasks), "SLURM_NNODES": "1", "SLURM_JOB_NUM_NODES": "1",
        "SLURM_NODELIST": "127.0.0.1",
        "MASTER_PORT": str(free_port()),  # else derived from the job id: could collide with a parallel test
    }  # fmt: skip
    path = f"{home / 'bin'}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    return ddp_environment(PATH=path, **{**job, **variables})


def with_slurm(home: Path) -> list[str]:
    """scripts/slurm.sh as sbatch runs it for a 1-node, 2-task job, with a stand-in srun on the PATH."""
    script = ["bash", str(ROOT / "scripts/slurm.sh"), *ON_CPU, *TINY_TWO_EPOCHS]
    return launch(home, script, env=slurm_job(home))


LAUNCHERS = {"lightning": with_lightning, "torchrun": with_torchrun, "two_nodes": as_two_nodes, "slurm": with_slurm}


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
def test_each_launcher_ends_with_one_run_written_once_by_rank_zero(launched, launcher):
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
@pytest.mark.parametrize("tag", ["train/loss", "train/acc", "val/loss", "val/acc", "lr/decay"])
def test_every_launcher_logs_the_same_metrics(launched, tag):
    reference = scalars(launched["lightning"][0], tag)
    for launcher in LAUNCHERS:
        logged = scalars(launched[launcher][0], tag)
        assert [step for step, _ in logged] == [step for step, _ in reference], launcher
        values, expected = (torch.tensor([value for _, value in s]) for s in (logged, reference))
        if tag.endswith("acc"):
            assert torch.equal(values, expected), launcher
        torch.testing.assert_close(values, expected, **TOLERANCE, msg=lambda m, name=launcher: f"{name}: {m}")


@pytest.mark.slow
def test_the_learning_rate_schedule_completes_under_ddp(launched):
    # The total step count is derived from the 2-process world: after the final step the LR sits at min_lr.
    scheduler = load(launched["lightning"][0] / "checkpoints/last.ckpt")["lr_schedulers"][0]
    assert scheduler["last_epoch"] == STEPS
    assert scheduler["_last_lr"] == pytest.approx([1e-5, 1e-5], abs=1e-12)


@pytest.fixture
def checkpoint(launched, tmp_path) -> Path:
    """The DDP run's final checkpoint, copied out of its run so that evaluations leave that run untouched."""
    return Path(shutil.copy(launched["lightning"][0] / "checkpoints/last.ckpt", tmp_path / "model.ckpt"))


@pytest.mark.slow
def test_ddp_validation_equals_a_single_process_validating_the_same_checkpoint(launched, checkpoint):
    # The fit's last validation ran on 2 ranks with 8 and 7 batches; this one runs on 1 with batches of 64.
    single = run("validate", "--ckpt_path", str(checkpoint)).trainer.callback_metrics
    run_dir = launched["lightning"][0]
    assert scalars(run_dir, "val/acc")[-1][1] == single["val/acc"].item()
    assert scalars(run_dir, "val/loss")[-1][1] == pytest.approx(single["val/loss"].item(), rel=1e-5)


@pytest.mark.slow
def test_ddp_test_equals_a_single_process_testing_the_same_checkpoint(checkpoint, tmp_path):
    launch(tmp_path, project("test", "--config", DEFAULT, *QUIET, "--trainer.strategy=ddp", "--trainer.devices=2",
                             "--ckpt_path", str(checkpoint)))  # fmt: skip
    single = run("test", "--ckpt_path", str(checkpoint)).trainer.callback_metrics
    ddp_run = tmp_path / "runs/digits/version_0"  # the single process's is version_1
    assert scalars(ddp_run, "test/acc")[-1][1] == single["test/acc"].item()
    assert scalars(ddp_run, "test/loss")[-1][1] == pytest.approx(single["test/loss"].item(), rel=1e-5)


@pytest.mark.slow
def test_ddp_predict_writes_one_file_in_input_order_like_a_single_process(checkpoint, tmp_path):
    launch(tmp_path, project("predict", "--config", DEFAULT, *QUIET, "--trainer.strategy=ddp",
                             "--trainer.devices=2", "--ckpt_path", str(checkpoint)))  # fmt: skip
    run("predict", "--ckpt_path", str(checkpoint))
    written = sorted(tmp_path.glob("runs/digits/version_*/predictions*.csv"))
    assert [p.relative_to(tmp_path / "runs/digits").as_posix() for p in written] == [
        "version_0/predictions.csv",  # both ranks' shards, from rank zero
        "version_1/predictions.csv",  # the single process
    ]
    ddp, single = (rows(path) for path in written)
    assert len(ddp) == 257 and [row["index"] for row in ddp] == [str(i) for i in range(257)]
    assert [row["label"] for row in ddp] == [row["label"] for row in single]
    for a, b in zip(ddp, single, strict=True):
        assert float(a["probability"]) == pytest.approx(float(b["probability"]), rel=1e-5)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as file:
        return list(csv.DictReader(file))
