"""A run folder is written only by the run that owns it, nothing is written outside the runs root, and a run's
folder says what it trained (issue 13, items 1 and 2; issue 15, item 6)."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from lightning_runs.runs import lock_run, unlock_run
from lightning_runs.tools import sweep
from project.cli import cli_main
from project.data import DigitsDataModule
from support import DEFAULT, QUIET, ROOT, assert_kept, refusal, run, snapshot, start, wait_for, working_directory

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
    (["--trainer.logger.init_args.save_dir="], "--trainer.logger.init_args.save_dir '': must name the runs root"),
    (["--trainer.logger.init_args.save_dir=notes.txt/runs"], "notes.txt is a file, not a folder"),
]


@pytest.mark.parametrize("args,expected", OUTSIDE)
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


def test_own_data_trains_in_its_own_folder_where_the_same_options_find_it_again(three):
    run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1", *three)
    assert [p.name for p in Path("runs").iterdir()] == ["three"]
    assert run("test", "--ckpt_path=best", *three).trainer.ckpt_path == "runs/three/version_0/checkpoints/best.ckpt"
