"""A run's folder says what it trained: its data, then its network where it is not the default one, unless the run
is named; other data never lands in a folder of runs of other data. `--ckpt_path best|last` means the run this
command describes: the newest run of its recipe, not of its name."""

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_files import PointsFile
from tiny_networks import WithNetwork
from tiny_runs import QUIET, assert_kept, refusal, run, snapshot
from tiny_stops import CrashAt

from lightning_runs.errors import main
from tiny_tasks import TRAINER_DEFAULTS, TinyCLI, TinyDataModule


class OtherPointsFile(PointsFile):
    """Another DataModule reading the same kind of file."""


@pytest.fixture
def three() -> list[str]:
    """three.npz: the tiny task's points as a user's file."""
    data = TinyDataModule()
    data.setup("fit")
    points, labels = (torch.cat(tensors) for tensors in zip(*data.splits.values(), strict=True))
    np.savez("three.npz", points=points.numpy(), labels=labels.numpy())
    return ["--data=tiny_files.PointsFile", "--data.path=three.npz"]


HIDDEN = "--model.network=tiny_networks.Hidden"
NAMED_CONFIG = "model:\n  network: tiny_networks.Hidden\ntrainer:\n  logger:\n    init_args:\n      name: hidden\n"
HARDWARE = "trainer:\n  accelerator: cpu\n  devices: 1\n  precision: bf16-mixed\n"  # the same recipe, other hardware


@pytest.mark.parametrize(
    "args,folder",
    [
        ([], "tiny"),
        (["DATA"], "three"),
        ([HIDDEN], "tiny-hidden"),
        (["DATA", HIDDEN], "three-hidden"),
        (["--config", "hidden.yaml"], "hidden"),  # the config names its runs
        (["--config", "hardware.yaml"], "tiny"),  # the same recipe, other hardware
        (["DATA", "--trainer.logger.init_args.name=mine"], "mine"),  # a name given always wins
    ],
)
def test_a_run_folder_is_named_for_its_data_and_network_unless_named(three, args, folder):
    Path("hidden.yaml").write_text(NAMED_CONFIG)
    Path("hardware.yaml").write_text(HARDWARE)
    args = [
        "fit",
        *QUIET,
        "--trainer.fast_dev_run=true",
        *[arg for a in args for arg in (three if a == "DATA" else [a])],
    ]
    cli = main(lambda: TinyCLI(WithNetwork, TinyDataModule, TRAINER_DEFAULTS, args=args))  # named before it runs
    assert cli.config.fit.trainer.logger.init_args.name == folder


def test_other_data_whose_files_have_the_same_stem_trains_in_a_folder_of_its_own(three):
    points, labels = np.load("three.npz")["points"], np.load("three.npz")["labels"]
    np.savetxt("three.csv", np.column_stack([points, labels]), delimiter=",")  # the same points as a table
    table = ["--data=tiny_files.PointsFile", "--data.path=three.csv"]
    other_class = [f"--data={__name__}.OtherPointsFile", "--data.path=three.npz"]
    for data in (three, table, other_class, three):
        run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1", *data)
    # The first data to use a name keeps it; each other takes the first free one of its longer names.
    assert sorted(p.name for p in Path("runs").iterdir()) == ["three", "three-csv", "three-npz"]
    assert "OtherPointsFile" in Path("runs/three-npz/version_0/config.yaml").read_text()
    assert sorted(p.name for p in Path("runs/three").iterdir()) == ["version_0", "version_1"]
    assert run("test", "--ckpt_path=best", *table).trainer.ckpt_path == "runs/three-csv/version_0/checkpoints/best.ckpt"


def test_own_data_trains_in_its_own_folder_where_the_same_options_find_it_again(three):
    run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1", *three)
    assert [p.name for p in Path("runs").iterdir()] == ["three"]
    assert run("test", "--ckpt_path=best", *three).trainer.ckpt_path == "runs/three/version_0/checkpoints/best.ckpt"


A = "model:\n  lr: 0.003\ntrainer:\n  max_epochs: 1\n  limit_train_batches: 2\n"  # a.yaml: the user's own recipe
B = "trainer:\n  max_epochs: 2\n  limit_train_batches: 2\n"  # b.yaml: the default one, shortened
D = "model:\n  lr: 0.005\ntrainer:\n  max_epochs: 2\n  limit_train_batches: 2\n"  # d.yaml: never trained


def with_configs() -> None:
    for name, text in (("a.yaml", A), ("b.yaml", B), ("d.yaml", D)):
        Path(name).write_text(text)


@pytest.fixture(scope="module")
def recipes(tmp_path_factory) -> Path:
    """runs/tiny: version_0 of b.yaml stopped after its first epoch, version_1 of a.yaml finished, version_2 a
    default fit of one batch, finished: the newest, of neither config."""
    home = tmp_path_factory.mktemp("recipes")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        with_configs()
        with pytest.raises(RuntimeError, match="crash"):
            run("fit", "--config=b.yaml", callbacks=[CrashAt(step=2)])
        run("fit", "--config=a.yaml")
        run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1")
    return home / "runs"


@pytest.fixture
def three_recipes(recipes) -> Path:
    shutil.copytree(recipes, "runs")
    with_configs()
    return Path("runs/tiny")


def test_best_is_the_best_checkpoint_of_the_run_the_config_trained(three_recipes, capsys):
    tested = run("test", "--config=a.yaml", "--ckpt_path=best")
    assert tested.trainer.ckpt_path == str(three_recipes / "version_1/checkpoints/best.ckpt")
    assert tested.model.hparams.lr == 0.003 and "Using the checkpoint's model.lr" not in capsys.readouterr().out


def test_last_resumes_the_unfinished_run_of_the_config_not_a_newer_finished_one(three_recipes):
    resumed = run("fit", "--config=b.yaml", "--ckpt_path=last")
    assert resumed.trainer.ckpt_path == str(three_recipes / "version_0/checkpoints/last.ckpt")
    assert resumed.trainer.current_epoch == 2
    folders = sorted(p.name for p in three_recipes.iterdir())
    assert folders == ["version_0", "version_1", "version_2"], "resumed in its own folder, none added"


@pytest.mark.parametrize("subcommand,name", [("test", "best"), ("fit", "last")])
def test_no_run_of_the_recipe_is_one_line_listing_the_runs_there_are(three_recipes, subcommand, name, capsys):
    before = snapshot()
    error = refusal(capsys, lambda: run(subcommand, "--config=d.yaml", f"--ckpt_path={name}"))
    assert error.startswith(f"error: --ckpt_path {name}: no run of {three_recipes} has the recipe this command")
    # Newest first, each with what differs from this command.
    assert "version_2 (model.lr 0.05, this command 0.005; trainer.max_epochs 1, this command 2" in error
    assert "version_1 (model.lr 0.003, this command 0.005" in error and "version_0 (model.lr 0.05" in error
    assert f"name one (--ckpt_path {three_recipes}/version_2/checkpoints/{name}.ckpt)" in error
    assert not assert_kept(before, snapshot()), "nothing written, not even in runs/"


@pytest.mark.parametrize(
    "subcommand,version,expected",
    [
        ("test", 2, "--model.lr 0.003 (checkpoint: 0.05): an evaluation uses the checkpoint's model as it was"),
        ("fit", 0, "--model.lr 0.005 (checkpoint: 0.05): a resumed run keeps its checkpoint's settings"),
    ],
)
def test_a_config_value_that_a_named_checkpoint_contradicts_is_refused(
    three_recipes, subcommand, version, expected, capsys
):
    before, config = snapshot(), "a.yaml" if subcommand == "test" else "d.yaml"
    checkpoint = three_recipes / f"version_{version}/checkpoints/last.ckpt"
    error = refusal(capsys, lambda: run(subcommand, f"--config={config}", f"--ckpt_path={checkpoint}"))
    assert error.startswith(f"error: {expected}"), error
    assert not assert_kept(before, snapshot()), "nothing written, not even in runs/"
