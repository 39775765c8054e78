"""`python -m <package> verify <fit options>`: exact on a module that resumes exactly; on one that does not, exit 1 and
the first value that differs named, with its likely cause; bad options refused in one line, as `fit` refuses them."""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from tiny_runs import command, finished, process_environment

import lightning_runs
from lightning_runs.testing import refusal
from lightning_runs.tools import verify
from tiny_tasks import TinyClassifier, cli_main

EXACT = "--data=tiny_tasks.TinyBatches"  # batches that resume their position mid-epoch


class UnsavedNoise(TinyClassifier):
    """Adds noise to its inputs from a generator of its own that no checkpoint holds: a resumed run starts it again."""

    def __init__(self, num_classes: int = 3, input_shape: tuple[int, ...] = (4,), lr: float = 0.05) -> None:
        super().__init__(num_classes, input_shape, lr)
        self.noise = torch.Generator().manual_seed(0)

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        samples, labels = batch
        noisy = samples + torch.randn(samples.shape, generator=self.noise)
        return F.cross_entropy(self(noisy), labels)


def rows(stdout: str) -> dict[str, str]:
    """The table verify printed: each stop point's and command's result."""
    lines = stdout[stdout.index("stop point or command") :].splitlines()[1:]
    names = [*verify.POINTS, *verify.EVALUATIONS]
    return {name: line[len(name) :].strip() for line in lines for name in names if line.startswith(name)}


@pytest.fixture
def verified(monkeypatch, capfd):
    """`python -m tiny_tasks verify <args>` in this process, as a finished process tells it: its stopped and resumed
    fits are `python -m tiny_tasks fit` processes either way, seeing this checkout with one thread each."""
    for name in ("PYTHONPATH", "OMP_NUM_THREADS"):
        monkeypatch.setenv(name, process_environment()[name])
    return lambda *args: finished(capfd, lambda: lightning_runs.main(cli_main, "tiny_tasks", ["verify", *args]))


@pytest.mark.slow
def test_a_module_that_resumes_exactly_is_exact_at_every_stop_and_every_command_works(verified):
    done = verified(EXACT)
    assert done.returncode == 0, done.stderr[-3000:]
    table = rows(done.stdout)
    assert all(table[name].startswith("exact at batch") for name in verify.POINTS), done.stdout
    assert all(table[stage] == "works" for stage in verify.EVALUATIONS), done.stdout
    assert not Path("runs").exists()  # every run in a temporary folder: the user's runs/ untouched


@pytest.mark.slow
def test_a_module_drawing_from_an_unsaved_generator_differs_and_the_weights_are_named(verified):
    done = verified(EXACT, "--model=test_verify.UnsavedNoise")
    assert done.returncode == 1, done.stderr[-3000:]
    table = rows(done.stdout)
    for name in verify.POINTS:
        assert table[name].startswith("differs at batch") and "state_dict/layer." in table[name], done.stdout
        assert "a state no checkpoint holds" in table[name]
    assert "not as promised" in done.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_recipe_of_more_than_one_process_is_refused_in_one_line_after_its_first_fit():
    # A process: the DDP launcher's process group, once started, would stay in this one.
    done = command("verify", EXACT, "--trainer.accelerator=cpu", "--trainer.strategy=ddp", "--trainer.devices=2")
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "error: verify compares fits of one process, and this recipe ran on 2 (its devices, nodes or strategy): give"
        " --trainer.devices 1 --trainer.num_nodes 1"
    )
    assert "Traceback" not in done.stderr and not Path("runs").exists()


def test_an_option_fit_does_not_take_is_refused_in_one_line_and_nothing_is_left(capsys, tmp_path):
    line = refusal(capsys, lambda: lightning_runs.main(cli_main, "tiny_tasks", ["verify", "--model.init_args.nope=1"]))
    assert "nope" in line
    assert not list(tmp_path.iterdir())
