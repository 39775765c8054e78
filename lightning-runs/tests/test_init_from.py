"""A new run from another's weights (--init_from, InitFrom): the matching names and shapes are loaded, a new head
stays as initialized and is said, --freeze leaves parts untrained, and the new run's optimizer, steps and folder are
its own; a resume of the new run continues it, not its origin."""

import shutil
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest
import torch
import yaml
from tiny_runs import load, refusal, run

from lightning_runs.checkpoints import InitFrom
from lightning_runs.errors import UsageError
from lightning_runs.testing import SignalAt

ORIGIN = "runs/tiny/version_0"


@pytest.fixture
def origin(finished_two_epochs) -> str:
    """A fit of two epochs (conftest's), copied into this test's runs/: the run a new one starts from."""
    shutil.copytree(finished_two_epochs, "runs")
    return ORIGIN


@pytest.fixture(scope="module")
def again(finished_two_epochs, tmp_path_factory) -> tuple[Path, str, str]:
    """A new run from conftest's two-epoch fit, at lr 0 (its weights stay as loaded), stopped by SIGTERM and resumed
    to its end; the tests below only read it: its home folder, and what each of the two commands printed."""
    home = tmp_path_factory.mktemp("again")
    shutil.copytree(finished_two_epochs, home / "runs")
    given = ["--name=again", f"--init_from={ORIGIN}", "--model.lr=0"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        with redirect_stdout(stopped := StringIO()), pytest.raises(SystemExit):  # in its second epoch (8 steps one)
            run("fit", *given, callbacks=[SignalAt(step=10)])
        with redirect_stdout(resumed := StringIO()):
            run("fit", *given, "--ckpt_path=last")
    return home, stopped.getvalue(), resumed.getvalue()


def test_matching_weights_load_and_are_said(again):
    home, stopped, _ = again
    best = load(home / ORIGIN / "checkpoints/best.ckpt")["state_dict"]
    assert f"init from {ORIGIN}/checkpoints/best.ckpt: 2 of 2 weights loaded\n" in stopped
    last = load(home / "runs/again/version_0/checkpoints/last.ckpt")["state_dict"]
    assert torch.equal(last["layer.weight"], best["layer.weight"])  # at lr 0: the weights as loaded
    # Where it started, beside its settings: hparams.yaml and TensorBoard's HPARAMS entry.
    logged = yaml.unsafe_load((home / "runs/again/version_0/hparams.yaml").read_text())  # Lightning writes tuples
    assert logged["init_from"] == f"{ORIGIN}/checkpoints/best.ckpt"


def test_a_network_body_loads_and_frozen_parts_do_not_move(capsys):
    from tiny_networks import cli_main

    run("fit", "--model.network=tiny_networks.Hidden", "--trainer.max_epochs=2", cli=cli_main)
    origin = "runs/tiny_networks/version_0"  # the default name: the package's
    body = {k: v for k, v in load(f"{origin}/checkpoints/best.ckpt")["state_dict"].items() if ".hidden." in k}
    capsys.readouterr()
    run(
        "fit", "--model.network=tiny_networks.Hidden", "--data.num_classes=5", "--name=five", f"--init_from={origin}",
        "--freeze=[layer.hidden]", "--trainer.max_epochs=2", cli=cli_main,
    )  # fmt: skip
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("init from"))
    assert "left as initialized: layer.layer.weight (5, 8) (there (3, 8)), layer.layer.bias (5,) (there (3,))" in line
    assert "frozen: layer.hidden (40 parameters)" in line
    after = load("runs/five/version_0/checkpoints/last.ckpt")
    for name, weight in body.items():
        assert torch.equal(after["state_dict"][name], weight), f"{name} was frozen yet changed"
    assert after["global_step"] == load(f"{origin}/checkpoints/last.ckpt")["global_step"]  # its own 2 epochs
    assert after["hyper_parameters"]["num_classes"] == 5


def test_a_resume_continues_the_new_run(again):
    home, stopped, resumed = again
    assert (stopped + resumed).count("init from") == 1  # the resume restores the new run's own weights
    assert load(home / "runs/again/version_0/checkpoints/last.ckpt")["global_step"] == 3 * 6


def test_nothing_in_common_and_unknown_parts_are_refused(origin, capsys):
    from tiny_networks import cli_main

    line = refusal(capsys, lambda: run("fit", "--name=b", "--model.network=tiny_networks.Hidden",
                                       f"--init_from={origin}", cli=cli_main))  # fmt: skip
    assert "none of its weights fits" in line and "start from a checkpoint of a module with the same parts" in line
    line = refusal(capsys, lambda: run("fit", "--name=c", "--freeze=[nothing]"))
    assert line == "error: --freeze: 'nothing' is no submodule of TinyClassifier"
    assert not any(p.name in ("b", "c") for p in __import__("pathlib").Path("runs").iterdir())


def test_init_from_alone_in_a_plain_trainer(tmp_path):
    import lightning as L
    from tiny_networks import Hidden, WithNetwork

    from tiny_tasks import TinyDataModule

    origin = WithNetwork(Hidden)
    L.Trainer(max_epochs=0, logger=False, enable_checkpointing=False).fit(origin, TinyDataModule())
    torch.save({"state_dict": origin.state_dict()}, tmp_path / "origin.ckpt")
    module = WithNetwork(Hidden)
    part = InitFrom(str(tmp_path / "origin.ckpt"), freeze=["layer.hidden"])
    L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, callbacks=[part]).fit(module, TinyDataModule())
    hidden = module.layer.hidden[1][0].weight
    assert torch.equal(hidden, origin.layer.hidden[1][0].weight)  # loaded, then frozen through a training epoch
    assert not torch.equal(module.layer.layer.weight, origin.layer.layer.weight)  # loaded, then trained
    assert part.left == [] and len(part.loaded) == len(origin.state_dict())


def test_init_from_in_a_plain_trainer_words_its_refusals_as_python_gives_its_settings(tmp_path):
    import lightning as L
    from tiny_networks import Hidden, WithNetwork

    from tiny_tasks import TinyClassifier, TinyDataModule

    other = tmp_path / "other.ckpt"
    torch.save({"state_dict": WithNetwork(Hidden).state_dict()}, other)  # no name in common with TinyClassifier's
    refusals = [
        (InitFrom(str(other)), f'InitFrom(path="{other}"): none of its weights fits TinyClassifier (no name and shape'),
        (InitFrom(None, freeze=["nothing"]), "InitFrom(freeze=...): 'nothing' is no submodule of TinyClassifier"),
        (InitFrom(None, freeze=["layer"]), "InitFrom(freeze=...): every parameter frozen (layer), nothing trains"),
    ]
    for part, said in refusals:
        trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, callbacks=[part])
        with pytest.raises(UsageError) as refused:
            trainer.fit(TinyClassifier(), TinyDataModule())
        assert str(refused.value).startswith(said), str(refused.value)


@pytest.mark.parametrize("path", ["runs/none/version_0", "missing.ckpt"])
def test_a_missing_origin_is_one_line(capsys, path):
    line = refusal(capsys, lambda: run("fit", f"--init_from={path}"))
    assert path in line


def test_freezing_every_parameter_is_one_line_before_training_and_leaves_no_run_folder(capsys):
    """Backward failed on the first step (`element 0 of tensors does not require grad`), its run folder left."""
    line = refusal(capsys, lambda: run("fit", "--freeze=[layer]"))
    assert line == "error: --freeze: every parameter frozen (layer), nothing trains"
    assert not Path("runs").exists()


def test_an_origin_holding_no_tensor_where_a_weight_is_is_one_line_naming_the_file_and_the_weight(origin, capsys):
    """Its shape was read: an AttributeError traceback in InitFrom."""
    checkpoint = load(f"{origin}/checkpoints/best.ckpt")
    checkpoint["state_dict"]["layer.bias"] = "a string"
    torch.save(checkpoint, "damaged.ckpt")
    line = refusal(capsys, lambda: run("fit", "--name=b", "--init_from=damaged.ckpt"))
    assert line.startswith("error: --init_from damaged.ckpt: its weight layer.bias is a str, not a tensor"), line
    assert not Path("runs/b").exists()
