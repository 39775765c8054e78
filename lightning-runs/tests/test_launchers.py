"""Which rank a process is, read from the launcher's variables before any process group exists, and the launch
mistakes refused in one line before anything runs."""

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from lightning import Trainer
from lightning.fabric.plugins.environments import SLURMEnvironment
from lightning.fabric.utilities.rank_zero import _get_rank
from lightning.pytorch.utilities import rank_zero_only
from tiny_runs import QUIET, process_environment, refusal, run, snapshot

from lightning_runs.distributed import launched_as_rank_zero

DDP_ON_CPU = ["--trainer.strategy=ddp", "--trainer.devices=2", "--trainer.accelerator=cpu"]
ONE_EPOCH_TWO_BATCHES = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]


@pytest.fixture
def launcher_environment(monkeypatch):
    """os.environ without launcher variables, for the test to fill; it and Lightning's global rank are put back."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(process_environment())
    monkeypatch.setattr(rank_zero_only, "rank", rank_zero_only.rank)  # Lightning sets it from the environment
    yield os.environ
    os.environ.clear()
    os.environ.update(saved)


def test_lightning_reads_rank_and_world_size_from_the_variables_of_a_slurm_job(launcher_environment):
    # Task 3 of a job of 2 nodes x 2 tasks: the second task on the second node.
    job = {
        "SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "tiny", "SLURM_NTASKS": "4", "SLURM_NTASKS_PER_NODE": "2",
        "SLURM_NNODES": "2", "SLURM_NODELIST": "gpu-node[07-08]", "SLURM_PROCID": "3", "SLURM_LOCALID": "1",
        "SLURM_NODEID": "1",
    }  # fmt: skip
    launcher_environment.update(job)
    trainer = Trainer(accelerator="cpu", strategy="ddp", devices=2, num_nodes=2, logger=False)
    environment = trainer.strategy.cluster_environment
    assert isinstance(environment, SLURMEnvironment)
    assert (trainer.global_rank, trainer.local_rank, trainer.node_rank, trainer.world_size) == (3, 1, 1, 4)
    assert (environment.main_address, environment.main_port) == ("gpu-node07", 15000 + 4242)
    assert not trainer.is_global_zero


@pytest.mark.parametrize(
    "variables,rank_zero",
    [
        ({}, True),  # a single process, or the first of Lightning's own processes
        ({"LOCAL_RANK": "1"}, False),  # the second of Lightning's processes
        ({"RANK": "1", "LOCAL_RANK": "0", "GROUP_RANK": "1"}, False),  # torchrun on node 1
        ({"SLURM_PROCID": "2"}, False),
        ({"NODE_RANK": "1"}, False),  # Lightning's multi-node launch: the first process of node 1
    ],
)
def test_only_the_future_global_rank_zero_claims_the_run_folder(launcher_environment, variables, rank_zero):
    launcher_environment.update(variables)
    rank_zero_only.rank = _get_rank() or 0  # as Lightning sets it when imported, before any Trainer exists
    assert launched_as_rank_zero() is rank_zero


def test_rank_variables_left_without_a_launcher_are_refused_before_anything_runs(launcher_environment, capsys):
    # Copied from a job script into a shell: Lightning would run a lone rank 1 that logs nothing and exits 0.
    launcher_environment.update({"LOCAL_RANK": "1", "WORLD_SIZE": "2", "RANK": "1"})
    line = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES))
    assert line == (
        "error: RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 set, but no launcher (torchrun, SLURM, Lightning's own) started this"
        " process: it would run as one rank of a job that does not exist and log nothing; unset them"
    )
    assert snapshot() == {}


@pytest.fixture
def taken_port():
    with socket.socket() as holder:  # another program listening on the port
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_ddp_with_a_master_port_in_use_is_refused_and_starts_no_process(launcher_environment, taken_port, capsys):
    launcher_environment["MASTER_PORT"] = str(taken_port)
    line = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, *DDP_ON_CPU))
    assert line == (
        f"error: MASTER_PORT={taken_port}: cannot listen there (Address already in use); unset MASTER_PORT (Lightning"
        " then picks a free port) or choose another"
    )
    assert psutil.Process().children(recursive=True) == []  # no rank 1 left waiting for a rank zero that failed
    assert snapshot() == {}


@pytest.mark.parametrize("port", ["99999", "0", "-1", "abc"])
def test_ddp_with_a_master_port_that_is_no_port_number_is_refused_and_starts_no_process(
    launcher_environment, port, capsys
):
    launcher_environment["MASTER_PORT"] = port  # 99999 was an OverflowError traceback from bind()
    line = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, *DDP_ON_CPU))
    assert line == (
        f"error: MASTER_PORT={port}: not a port number (1 to 65535); unset MASTER_PORT (Lightning then picks a free"
        " port) or give one in that range"
    )
    assert psutil.Process().children(recursive=True) == []
    assert snapshot() == {}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("torchrun", path=Path(sys.executable).parent) is None, reason="needs torchrun")
def test_torchrun_with_more_processes_than_devices_says_so_once(tmp_path):
    torchrun = shutil.which("torchrun", path=Path(sys.executable).parent)
    command = [torchrun, "--standalone", "--nproc_per_node", "2", "-m", "tiny_tasks", "fit", *QUIET]
    command += ONE_EPOCH_TWO_BATCHES  # should it train after all
    done = subprocess.run(command, cwd=tmp_path, env=process_environment(), capture_output=True, text=True, timeout=300)
    said = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert said == [
        "error: torchrun started 2 processes per node (--nproc_per_node 2) but --trainer.devices is 1: pass"
        " --trainer.devices 2 (the two must be equal)"
    ], done.stderr[-3000:]
    # torchrun itself exits 1 with its own report of the failed worker (exit code 2); no traceback from the ranks.
    assert done.returncode == 1 and re.search(r"exitcode\s*: 2 ", done.stderr), done.stderr[-3000:]
    files = re.findall(r'File "([^"]+)"', done.stderr)
    assert all("torch/distributed" in f or f.endswith("bin/torchrun") for f in files), done.stderr[-3000:]
    assert not (tmp_path / "runs").exists()
