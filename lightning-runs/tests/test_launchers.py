"""Which rank a process is, read from the launcher's variables before any process group exists: only the future
global rank zero claims the run folder."""

import os

import pytest
from lightning import Trainer
from lightning.fabric.plugins.environments import SLURMEnvironment
from lightning.fabric.utilities.rank_zero import _get_rank
from lightning.pytorch.utilities import rank_zero_only
from tiny_runs import process_environment

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
