"""FSDP (lightning_runs.parallel) shards a module's networks itself, and refuses in one line a module it would shard
wrongly: a parameter in no network would drift apart on every process. Its fits and resumes on 2 CPU processes are in
test_sharded_checkpoints.py and the template's tests/template/test_fsdp.py."""

import sys

import pytest
from tiny_runs import QUIET, command

from lightning_runs.errors import UsageError
from lightning_runs.parallel import FSDP
from tiny_tasks import TinyClassifier, WeightsOnItself


def test_a_module_whose_parameters_all_sit_in_networks_is_sharded_by_fsdp_itself():
    model = TinyClassifier()
    FSDP().connect(model)
    assert model.configure_model.__name__ == "_shard_networks", "FSDP shards it in configure_model"


def test_a_parameter_outside_every_network_is_refused_it_would_drift_apart_on_every_process():
    with pytest.raises(UsageError, match="WeightsOnItself's parameter weight sits in no network"):
        FSDP().connect(WeightsOnItself())


def test_a_module_that_shards_itself_in_configure_model_is_left_to_it():
    class ShardsItself(WeightsOnItself):
        def configure_model(self) -> None: ...

    model = ShardsItself()
    FSDP().connect(model)
    assert model.configure_model.__func__ is ShardsItself.configure_model


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="2 processes over gloo")
def test_a_refused_two_process_launch_says_it_once_and_leaves_no_run_folder(tmp_path):
    """Every rank refuses (each connects its module); rank zero alone says it."""
    fsdp = ["--trainer.strategy.class_path=lightning_runs.parallel.FSDP", "--trainer.devices=2"]
    refused = command("fit", *QUIET, *fsdp, "--model=tiny_tasks.WeightsOnItself", cwd=tmp_path)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr[-3000:]
    assert errors == [
        "error: FSDP: WeightsOnItself's parameter weight sits in no network (a submodule with a forward); put it in"
        " one, or shard the module yourself in its configure_model()"
    ]
    assert not list(tmp_path.glob("runs/*/version_*"))
