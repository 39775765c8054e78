"""`--compile.enabled true` compiles any LightningModule's networks in place (speed/compile.py): its checkpoints are an
eager run's (the same keys), so compiled and eager runs resume from each other's, and a compiled run resumes exactly.
Compiled after Lightning's model summary, which runs forward under a dispatch mode a fullgraph compilation breaks on."""

from pathlib import Path

import pytest
import torch
from lightning.pytorch.callbacks import ModelSummary
from tiny_runs import refusal, run
from torch import nn
from torchmetrics.classification import MulticlassAccuracy

from lightning_runs.speed.compile import networks
from lightning_runs.testing import CrashAt
from tiny_tasks import TinyClassifier

STEPS = ["--trainer.max_epochs=3", "--trainer.limit_train_batches=3"]
COMPILED = ["--compile.enabled=true"]
LAST = Path("runs/tiny/version_0/checkpoints/last.ckpt")


class Blocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])  # a container: never called itself
        self.head = nn.Linear(4, 2)
        self.loss = nn.CrossEntropyLoss()  # no parameters: nothing to fuse
        self.accuracy = MulticlassAccuracy(2)  # a metric updates its state in forward: left eager


def test_the_networks_compiled_are_the_submodules_with_parameters_not_containers_losses_or_metrics():
    assert [name for name, _ in networks(Blocks())] == ["blocks.0", "blocks.1", "head"]
    assert [name for name, _ in networks(TinyClassifier())] == ["layer"]


def test_a_module_with_nothing_to_compile_is_one_line_and_leaves_no_run_folder(capsys):
    error = refusal(capsys, lambda: run("fit", *STEPS, *COMPILED, "--model", "tiny_tasks.WeightsOnItself"))
    assert error == (
        "error: Compile: WeightsOnItself has no submodule with parameters to compile; put its network in a submodule,"
        " or leave compiling off"
    )
    assert not list(Path("runs").glob("*/version_*")), "no run folder where nothing ran"


@pytest.mark.slow
def test_fullgraph_compiles_the_default_tiny_model_after_lightnings_model_summary():
    """A fullgraph compilation at setup broke on the summary's forward: a 223-line traceback, a run folder left."""
    cli = run("fit", *STEPS, *COMPILED, "--compile.fullgraph=true", "--trainer.enable_model_summary=true")
    assert any(isinstance(c, ModelSummary) for c in cli.trainer.callbacks), "the model summary ran"
    (compiled,) = [c for c in cli.trainer.callbacks if type(c).__name__ == "Compile"]
    assert compiled.compiled == ["layer"] and cli.trainer.global_step == 9


def test_fullgraph_on_a_network_with_a_graph_break_is_one_line_naming_it_and_leaves_no_run_folder(capsys):
    """torch._dynamo's Unsupported, raised at the first step, was a 100-line traceback, and its run folder stayed."""
    from tiny_networks import cli_main

    args = [*STEPS, *COMPILED, "--compile.fullgraph=true", "--model.network=tiny_networks.GraphBreak"]
    error = refusal(capsys, lambda: run("fit", *args, cli=cli_main))
    assert f"met a graph break in forward ({Path(__file__).with_name('tiny_networks.py')}:" in error, error
    assert error.endswith(
        "compile without fullgraph (--compile.fullgraph false: the break runs eagerly), or remove the break"
    )
    assert not Path("runs").exists()


def fit(home: Path, *args: str, callbacks=()) -> dict:
    home.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        try:
            cli = run("fit", *STEPS, *args, callbacks=callbacks)
        except RuntimeError as crash:
            assert "crash" in str(crash)
            cli = None
        if cli is not None and "--compile.enabled=true" in args:
            (compiled,) = [c for c in cli.trainer.callbacks if type(c).__name__ == "Compile"]
            assert compiled.compiled == ["layer"]
        return torch.load(LAST, weights_only=True)


def assert_same_weights(a: dict, b: dict) -> None:
    assert a["global_step"] == b["global_step"]
    assert a["state_dict"].keys() == b["state_dict"].keys()
    for key, weights in a["state_dict"].items():
        assert torch.equal(weights, b["state_dict"][key]), key


@pytest.mark.slow
def test_a_compiled_run_resumes_exactly_and_compiled_and_eager_runs_resume_from_each_others_checkpoints(tmp_path):
    whole = fit(tmp_path / "whole", *COMPILED)
    eager = fit(tmp_path / "eager")
    assert whole["state_dict"].keys() == eager["state_dict"].keys(), "no _orig_mod. prefix: the eager run's keys"

    fit(tmp_path / "resumed", *COMPILED, callbacks=[CrashAt(step=3)])  # as its second epoch begins
    assert_same_weights(whole, fit(tmp_path / "resumed", *COMPILED, "--ckpt_path", "last"))

    for first, then in ((COMPILED, []), ([], COMPILED)):  # stopped compiled, resumed eager; and the other way
        home = tmp_path / f"from-{'compiled' if first else 'eager'}"
        fit(home, *first, callbacks=[CrashAt(step=3)])
        resumed = fit(home, *then, "--ckpt_path", "last")
        assert resumed["global_step"] == 9 and resumed["state_dict"].keys() == eager["state_dict"].keys()
        for key, weights in eager["state_dict"].items():  # compiled kernels round differently: close, not equal
            torch.testing.assert_close(resumed["state_dict"][key], weights, rtol=1e-4, atol=1e-5)
