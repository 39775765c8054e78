"""FSDP (lightning_runs.parallel) refuses, before any process starts, what would fail or drift inside the ranks. Its
fits, resumes and exports run on 2 CPU processes in the template's tests/template/test_fsdp.py."""

import pytest

from lightning_runs.errors import UsageError
from lightning_runs.parallel import FSDP
from tiny_tasks import TinyClassifier, WeightsOnItself


def test_a_module_whose_parameters_all_sit_in_networks_is_sharded_by_fsdp_itself():
    FSDP().check(TinyClassifier())


def test_a_parameter_outside_every_network_is_refused_it_would_drift_apart_on_every_process():
    with pytest.raises(UsageError, match="WeightsOnItself's parameter weight sits in no network"):
        FSDP().check(WeightsOnItself())


def test_a_module_that_shards_itself_in_configure_model_is_left_to_it():
    class ShardsItself(WeightsOnItself):
        def configure_model(self) -> None: ...

    FSDP().check(ShardsItself())


def test_sharded_checkpoints_are_accepted_run_folders_keep_them_as_folders():
    FSDP(save_distributed_checkpoint=True).check(TinyClassifier())  # checkpoints/sharded.py writes and reads them
