"""A run folder is written only by the run that owns it, nothing is written outside the runs root, and a run's
folder says what it trained (issue 13, items 1 and 2; issue 15, item 6)."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from lightning_runs.folders.layout import lock_run, unlock_run
from lightning_runs.tools import sweep
from project.cli import cli_main
from project.data import DigitsDataModule, FileDataModule
from support import (
    DEFAULT,
    QUIET,
    ROOT,
    assert_kept,
    every_other_daily,
    refusal,
    run,
    snapshot,
    start,
    wait_for,
    working_directory,
)

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]
ON_CPU = [
    "--trainer.accelerator=cpu",
    "--trainer.devices=1",
    "--trainer.strategy=auto",
    "--trainer.sync_batchnorm=false",
]
RUN = Path("runs/digits/version_0")


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> Path:
    """runs/ holding one run stopped after the first of its two epochs (a crash as the second began)."""
    home = tmp_path_factory.mktemp("stopped")
    with working_directory(home), pytest.raises(RuntimeError, match="crash"):
        run("fit", *SHORT, "--trainer.callbacks+=support.CrashAt", "--trainer.callbacks.step=2")
    return home / "runs"


@pytest.fixture
def runs(stopped) -> Path:
    shutil.copytree(stopped, "runs")
    return Path("runs")


# 1. Only the run that owns a folder writes into it.
@pytest.mark.parametrize("subcommand", ["fit", "test"])
def test_a_command_given_an_existing_version_by_hand_is_refused_and_the_run_untouched(runs, subcommand, capsys):
    before = snapshot()
    error = refusal(capsys, lambda: run(subcommand, *SHORT, "--trainer.logger.init_args.version=0"))
    assert f"{RUN} already exists" in error and "--ckpt_path runs/digits/version_0/checkpoints/last.ckpt" in error
    assert not assert_kept(before, snapshot()), "nothing written"


def test_a_version_given_by_hand_that_is_new_gets_that_folder(capsys):
    run("fit", *SHORT, "--trainer.logger.init_args.version=mine")
    assert Path("runs/digits/mine/checkpoints/last.ckpt").is_file()


def test_ckpt_path_last_with_a_version_given_by_hand_resumes_that_run_or_starts_it(runs, capsys):
    """What scripts/slurm.sh passes on every attempt of a job: the job's own run folder and `--ckpt_path last`. The
    first attempt starts that run from step 0; a requeued attempt resumes it, never the newest other run."""
    pinned = ["--trainer.logger.init_args.version=slurm-4242", "--ckpt_path=last"]
    with pytest.raises(RuntimeError, match="crash"):  # stopped as its second epoch began, like version_0
        run("fit", *SHORT, *pinned, "--trainer.callbacks+=support.CrashAt", "--trainer.callbacks.step=2")
    assert "No runs/digits/slurm-4242/checkpoints/last.ckpt yet: starting from step 0" in capsys.readouterr().out
    assert Path("runs/digits/slurm-4242/checkpoints/last.ckpt").is_file()
    resumed = run("fit", *SHORT, *pinned)  # version_0, stopped at step 2 too, is not the one it continues
    assert "fit from runs/digits/slurm-4242/checkpoints/last.ckpt" in capsys.readouterr().out
    assert resumed.trainer.global_step == 4 and Path(resumed.trainer.log_dir) == Path("runs/digits/slurm-4242")
    assert sorted(p.name for p in Path("runs/digits").iterdir()) == ["slurm-4242", "version_0"]


def test_a_run_in_use_by_another_command_is_refused(runs, capsys):
    held = lock_run(RUN)  # what a fit or an evaluation of the run holds while it runs
    try:
        before = snapshot()
        for command in (["fit", *SHORT, "--ckpt_path=last"], ["test", "--ckpt_path=last"]):
            error = refusal(capsys, lambda command=command: run(*command))
            assert f"{RUN} is in use by another command" in error
            assert not assert_kept(before, snapshot())
    finally:
        unlock_run(held)
    run("test", "--ckpt_path=last")  # once it is free


def test_a_command_that_fails_lets_go_of_its_run_folder(runs):
    """RunsCLI releases the folder where LightningCLI's __init__ ends, however the subcommand inside it ends."""
    with pytest.raises(RuntimeError, match="crash"):  # a resume that crashes as its first step begins
        run("fit", *SHORT, "--ckpt_path=last", "--trainer.callbacks+=support.CrashAt", "--trainer.callbacks.step=2")
    unlock_run(lock_run(RUN))  # free again: a lock still held would refuse this, in this process too
    run("test", "--ckpt_path=last")


@pytest.mark.slow
def test_a_second_resume_while_the_first_still_runs_is_refused(capsys):
    long = ["--trainer.max_epochs=30"]
    first = start("fit", "--config", DEFAULT, *QUIET, *long)
    try:
        wait_for(lambda: (RUN / "checkpoints/last.ckpt").exists() or first.poll() is not None, what="a checkpoint")
        assert first.poll() is None, first.stderr.read()[-2000:]
        error = refusal(capsys, lambda: run("fit", *long, "--ckpt_path=last"))  # finds the running run's last.ckpt
        assert f"{RUN} is in use by another command" in error
        assert first.poll() is None, "the first run goes on"
    finally:
        first.kill()
        first.wait()


# 2. Nothing is written outside the runs root.
OUTSIDE = [
    (["--trainer.logger.init_args.name=../../outside"], "must be one folder name"),
    (["--trainer.logger.init_args.name=ABSOLUTE/outside"], "must be one folder name"),
    (["--trainer.logger.init_args.name="], "must be one folder name"),
    (["--trainer.logger.init_args.version=../../outside"], "must be one folder name"),
    (["--trainer.logger.init_args.sub_dir=../outside"], "must be one folder name"),
    (["--checkpoint.filename=../../../best"], "must be a file name inside the run folder"),
    (["--prediction_writer.filename=ABSOLUTE/predictions.csv"], "must be a file name inside the run folder"),
    (["--checkpoint.dirpath=shared"], "a run's checkpoints go in its own folder"),  # two runs would share it
    (["--last_checkpoint.dirpath=runs/digits/version_0/checkpoints"], "a run's checkpoints go in its own folder"),
    (["--trainer.logger=false"], "every run writes into runs/<name>/version_N"),
    (["--trainer.logger=null"], "every run writes into runs/<name>/version_N"),
    (
        ["--trainer.logger=[{class_path: TensorBoardLogger}, {class_path: CSVLogger}]"],
        "a list of 2 loggers would split",
    ),
    (["--trainer.logger.init_args.name=" + "a" * 300], "300 bytes, more than the 255 a folder name may have"),
    (["--trainer.logger.init_args.name=a\nb"], "'a\\nb': must be one folder name (no '/' or control character"),
    (["--trainer.logger.init_args.name=a\x1b[31m"], "must be one folder name (no '/' or control character"),
    (["--trainer.logger.init_args.save_dir="], "--trainer.logger.init_args.save_dir '': must name the runs root"),
    (["--trainer.logger.init_args.save_dir=notes.txt/runs"], "notes.txt is a file, not a folder"),
]


@pytest.mark.parametrize("args,expected", every_other_daily(OUTSIDE, [c[0][0][:60] for c in OUTSIDE]))
def test_names_that_lead_out_of_the_runs_root_are_refused_before_anything_is_written(args, expected, capsys):
    args = [arg.replace("ABSOLUTE", str(Path.cwd())) for arg in args]
    Path("notes.txt").write_text("a file of yours, not a runs root\n")
    before = snapshot()
    assert expected in refusal(capsys, lambda: run("fit", *SHORT, *args))
    assert not assert_kept(before, snapshot()), "nothing written, not even in runs/"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_runs_root_you_cannot_write_in_is_refused_before_anything_is_written(capsys):
    Path("runs").mkdir(mode=0o555)
    assert "runs is not writable by you" in refusal(capsys, lambda: run("fit", *SHORT))
    assert not any(Path("runs").iterdir())


@pytest.mark.parametrize("empty", ["runs", "runs/digits"])
def test_a_refused_command_keeps_the_empty_folders_that_were_yours(empty, capsys):
    Path(empty).mkdir(parents=True)
    bad = ["--model.network=project.networks.DigitsCNN", "--model.network.init_args.channels=[0, 0]"]
    assert "holds no value" in refusal(capsys, lambda: run("fit", *SHORT, *bad))  # refused after the claim
    assert sorted(map(str, Path(".").rglob("*"))) == sorted(map(str, [Path(empty), *Path(empty).parents][:-1]))


def test_evaluating_a_checkpoint_that_lies_outside_the_runs_root_writes_a_new_run_inside_it(runs):
    loose = Path("elsewhere/checkpoints/last.ckpt")  # laid out like a run, but not under runs/
    loose.parent.mkdir(parents=True)
    shutil.copy(RUN / "checkpoints/last.ckpt", loose)
    before = snapshot()
    run("test", f"--ckpt_path={loose}")
    new = assert_kept(before, snapshot())
    assert {Path(p).parent for p in new} >= {Path("runs/digits/version_1")}, new


def test_a_sweep_study_name_that_leads_out_of_its_folder_is_refused(capsys):
    before = snapshot()
    config = str(ROOT / "sweeps/digits.yaml")
    assert "--study '../../../x': must be one file name" in refusal(
        capsys, lambda: sweep.main(cli_main, ["--config", config, "--study=../../../x"])
    )
    assert not assert_kept(before, snapshot())


# Issue 15, item 6: a run's folder says what it trained.
@pytest.fixture
def three() -> list[str]:
    images, labels = DigitsDataModule().load()
    keep = labels < 3
    np.savez("three.npz", images=images[keep].numpy(), labels=labels[keep].numpy())
    return ["--data=project.data.FileDataModule", "--data.path=three.npz"]


@pytest.mark.parametrize(
    "args,folder",
    [
        ([], "digits"),
        (["DATA"], "three"),
        (["--model.network=project.networks.MLP"], "digits-mlp"),
        (["DATA", "--model.network=project.networks.MLP"], "three-mlp"),
        (["--config", str(ROOT / "configs/experiments/mlp.yaml")], "mlp"),  # the config names its runs
        (["--config", str(ROOT / "configs/gpu.yaml"), *ON_CPU], "digits"),  # the same recipe, other hardware
        (["DATA", "--trainer.logger.init_args.name=mine"], "mine"),  # a name given always wins
    ],
)
def test_a_run_folder_is_named_for_its_data_and_network_unless_named(three, args, folder):
    args = [arg for a in args for arg in (three if a == "DATA" else [a])]
    cli = run("fit", "--trainer.fast_dev_run=true", *args)  # one step: the name is decided before anything runs
    assert cli.config.fit.trainer.logger.init_args.name == folder


class OtherFileDataModule(FileDataModule):
    """Another DataModule reading the same kind of file."""


def test_other_data_whose_files_have_the_same_stem_trains_in_a_folder_of_its_own(three):
    images, labels = np.load("three.npz")["images"], np.load("three.npz")["labels"]
    # The same digits as a table: a row of 64 values and its label each.
    np.savetxt("three.csv", np.column_stack([images.reshape(len(images), -1), labels]), delimiter=",")
    table = ["--data=project.data.FileDataModule", "--data.path=three.csv", "--data.sample_shape=[8, 8]"]
    other_class = [f"--data={__name__}.OtherFileDataModule", "--data.path=three.npz"]
    for data in (three, table, other_class, three):
        run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1", *data)
    # The first data to use a name keeps it; each other takes the first free one of its longer names.
    assert sorted(p.name for p in Path("runs").iterdir()) == ["three", "three-csv", "three-npz"]
    assert "OtherFileDataModule" in Path("runs/three-npz/version_0/config.yaml").read_text()
    assert sorted(p.name for p in Path("runs/three").iterdir()) == ["version_0", "version_1"]
    assert run("test", "--ckpt_path=best", *table).trainer.ckpt_path == "runs/three-csv/version_0/checkpoints/best.ckpt"


def test_own_data_trains_in_its_own_folder_where_the_same_options_find_it_again(three):
    run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1", *three)
    assert [p.name for p in Path("runs").iterdir()] == ["three"]
    assert run("test", "--ckpt_path=best", *three).trainer.ckpt_path == "runs/three/version_0/checkpoints/best.ckpt"


# 4. `--ckpt_path best|last` means the run this command describes: the newest run of its recipe, not of its name.
A = "model:\n  lr: 0.003\ntrainer:\n  max_epochs: 1\n  limit_train_batches: 2\n"  # a.yaml: the user's own recipe
B = "trainer:\n  max_epochs: 2\n  limit_train_batches: 2\n"  # b.yaml: the default one, shortened
D = "model:\n  lr: 0.005\ntrainer:\n  max_epochs: 2\n  limit_train_batches: 2\n"  # d.yaml: never trained


def with_configs() -> None:
    for name, text in (("a.yaml", A), ("b.yaml", B), ("d.yaml", D)):
        Path(name).write_text(text)


@pytest.fixture(scope="module")
def recipes(tmp_path_factory) -> Path:
    """runs/digits: version_0 of b.yaml stopped after its first epoch, version_1 of a.yaml finished, version_2 a
    default fit of one batch, finished: the newest, of neither config."""
    home = tmp_path_factory.mktemp("recipes")
    with working_directory(home):
        with_configs()
        with pytest.raises(RuntimeError, match="crash"):
            run("fit", "--config=b.yaml", "--trainer.callbacks+=support.CrashAt", "--trainer.callbacks.step=2")
        run("fit", "--config=a.yaml")
        run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1")
    return home / "runs"


@pytest.fixture
def three_recipes(recipes) -> Path:
    shutil.copytree(recipes, "runs")
    with_configs()
    return Path("runs/digits")


def test_best_is_the_best_checkpoint_of_the_run_the_config_trained(three_recipes, capsys):
    tested = run("test", "--config=a.yaml", "--ckpt_path=best")
    assert tested.trainer.ckpt_path == str(three_recipes / "version_1/checkpoints/best.ckpt")
    assert tested.model.hparams.lr == 0.003 and "Using the checkpoint's model.lr" not in capsys.readouterr().out


def test_last_resumes_the_unfinished_run_of_the_config_not_a_newer_finished_one(three_recipes):
    resumed = run("fit", "--config=b.yaml", "--ckpt_path=last")
    assert resumed.trainer.ckpt_path == str(three_recipes / "version_0/checkpoints/last.ckpt")
    assert resumed.trainer.current_epoch == 2 and sorted(p.name for p in three_recipes.iterdir()) == [
        "version_0",
        "version_1",
        "version_2",
    ], "resumed in its own folder, none added"


@pytest.mark.parametrize("subcommand,name", [("test", "best"), ("fit", "last")])
def test_no_run_of_the_recipe_is_one_line_listing_the_runs_there_are(three_recipes, subcommand, name, capsys):
    before = snapshot()
    error = refusal(capsys, lambda: run(subcommand, "--config=d.yaml", f"--ckpt_path={name}"))
    assert error.startswith(f"error: --ckpt_path {name}: no run of {three_recipes} has the recipe this command")
    # Newest first, each with what differs from this command.
    assert "version_2 (model.lr 0.01, this command 0.005; trainer.max_epochs 1, this command 2" in error
    assert "version_1 (model.lr 0.003, this command 0.005" in error and "version_0 (model.lr 0.01" in error
    assert f"name one (--ckpt_path {three_recipes}/version_2/checkpoints/{name}.ckpt)" in error
    assert not assert_kept(before, snapshot()), "nothing written, not even in runs/"


@pytest.mark.parametrize(
    "subcommand,version,expected",
    [
        ("test", 2, "--model.lr 0.003 (checkpoint: 0.01): an evaluation uses the checkpoint's model as it was"),
        ("fit", 0, "--model.lr 0.005 (checkpoint: 0.01): a resumed run keeps its checkpoint's settings"),
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


def test_a_run_folder_deleted_while_it_trains_is_one_line_naming_it(capsys):
    deleting = ["--trainer.callbacks+=support.DeleteRunAt", "--trainer.callbacks.step=2"]
    line = refusal(
        capsys, lambda: run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=4", *deleting), code=1
    )
    assert line.startswith("error: runs/digits/version_0 was deleted while this command wrote into it")
    # No writer's traceback either (TensorBoard's thread finds its events file gone first): refusal() checks stderr.
