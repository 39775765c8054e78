"""A run folder is written only by the run that owns it, and nothing is written outside the runs root. Names: see
test_run_names.py."""

import os
import shutil
from pathlib import Path

import pytest
from lightning.pytorch.callbacks import Callback
from tiny_runs import (
    assert_kept,
    exit_status,
    immutable,
    refusal,
    run,
    slow_repeats,
    snapshot,
    started_fit,
    wait_for,
)

from lightning_runs.run_folders import RunFolder, lock_run
from lightning_runs.testing import CrashAt

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]
RUN = Path("runs/tiny/version_0")


@pytest.fixture
def runs(stopped) -> Path:
    shutil.copytree(stopped, "runs")
    return Path("runs")


# 1. Only the run that owns a folder writes into it.
@pytest.mark.parametrize("subcommand", ["fit", "test"])
def test_a_command_given_an_existing_version_by_hand_is_refused_and_the_run_untouched(runs, subcommand, capsys):
    before = snapshot()
    error = refusal(capsys, lambda: run(subcommand, *SHORT, "--trainer.logger.init_args.version=0"))
    assert f"{RUN} already exists and belongs to another run" in error and f"{RUN}/checkpoints/last.ckpt" in error
    assert not assert_kept(before, snapshot()), "nothing written"


def test_a_version_given_by_hand_that_is_new_gets_that_folder():
    run("fit", *SHORT, "--trainer.logger.init_args.version=mine")
    assert Path("runs/tiny/mine/checkpoints/last.ckpt").is_file()


def test_ckpt_path_last_with_a_version_given_by_hand_resumes_that_run_or_starts_it(runs, capsys):
    """What a SLURM job script passes on every attempt of a job: the job's own run folder and `--ckpt_path last`. The
    first attempt starts that run from step 0; a requeued attempt resumes it, never the newest other run."""
    pinned = ["--trainer.logger.init_args.version=slurm-4242", "--ckpt_path=last"]
    with pytest.raises(RuntimeError, match="crash"):  # stopped as its second epoch began, like version_0
        run("fit", *SHORT, *pinned, callbacks=[CrashAt(step=2)])
    assert "No runs/tiny/slurm-4242/checkpoints/last.ckpt yet: starting from step 0" in capsys.readouterr().out
    assert Path("runs/tiny/slurm-4242/checkpoints/last.ckpt").is_file()
    resumed = run("fit", *SHORT, *pinned)  # version_0, stopped at step 2 too, is not the one it continues
    assert "fit resumes runs/tiny/slurm-4242 from last.ckpt (step 2)" in capsys.readouterr().out
    assert resumed.trainer.global_step == 4 and Path(resumed.trainer.log_dir) == Path("runs/tiny/slurm-4242")
    assert sorted(p.name for p in Path("runs/tiny").iterdir()) == ["slurm-4242", "version_0"]


KILLED_AT_STEP_1 = ["--trainer.callbacks+=lightning_runs.testing.SignalAt", "--trainer.callbacks.step=1"]


# About 8 s each on an idle machine (a process killed, then a fit); the second form every slow run.
@pytest.mark.parametrize(
    "again",
    [
        pytest.param([], id="the same command"),
        pytest.param(["--ckpt_path=last"], id="with --ckpt_path last", marks=pytest.mark.slow),
    ],
)
def test_a_pinned_run_killed_before_its_first_checkpoint_starts_again_from_step_0_in_its_folder(capsys, again):
    """A SLURM attempt or a cv fold killed with -9 before any checkpoint: its folder, pinned, belongs to whoever pins it
    next, once no command holds it; that attempt starts from step 0 there, the dead attempt's files gone."""
    pinned, folder = ["--trainer.logger.init_args.version=slurm-1"], Path("runs/tiny/slurm-1")
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("not a run's file")  # a folder of someone else's: refused, as before
    assert "already exists and belongs to another run" in refusal(capsys, lambda: run("fit", *SHORT, *pinned, *again))
    (folder / "notes.txt").unlink()
    assert exit_status(*SHORT, *pinned, *KILLED_AT_STEP_1, "--trainer.callbacks.signum=9") == -9
    dead = snapshot()
    assert (folder / "summary.json").is_file() and not (folder / "checkpoints").exists()
    held = lock_run(folder)  # a command still at work on it: refused, its files untouched
    try:
        assert f"{folder} is in use by another command" in refusal(capsys, lambda: run("fit", *SHORT, *pinned, *again))
        assert snapshot() == dead
    finally:
        os.close(held)
    fit = run("fit", *SHORT, *pinned, *again)
    said = capsys.readouterr().out
    assert f"{folder}: its run ended before a first checkpoint; started again from step 0, its files gone" in said
    assert fit.trainer.global_step == 4 and Path(fit.trainer.log_dir) == folder
    events = {Path(path) for path in dead if Path(path).name.startswith("events")}
    assert events and not events & set(folder.iterdir()), "the dead attempt's events file is gone"


def test_a_run_in_use_by_another_command_is_refused(runs, capsys):
    held = lock_run(RUN)  # what a fit or an evaluation of the run holds while it runs
    try:
        before = snapshot()
        for command in (["fit", *SHORT, "--ckpt_path=last"], ["test", "--ckpt_path=last"]):
            error = refusal(capsys, lambda command=command: run(*command))
            assert f"{RUN} is in use by another command" in error
            assert not assert_kept(before, snapshot())
    finally:
        os.close(held)
    run("test", "--ckpt_path=last")  # once it is free


def test_a_command_that_fails_lets_go_of_its_run_folder(runs):
    """RunsCLI releases the folder where LightningCLI's __init__ ends, however the subcommand inside it ends."""
    with pytest.raises(RuntimeError, match="crash"):  # a resume that crashes as its first step begins
        run("fit", *SHORT, "--ckpt_path=last", callbacks=[CrashAt(step=2)])
    os.close(lock_run(RUN))  # free again: a lock still held would refuse this, in this process too
    run("test", "--ckpt_path=last")


@pytest.mark.slow
def test_a_second_resume_while_the_first_still_runs_is_refused(capsys):
    long = ["--trainer.max_epochs=100000"]  # the tiny task's epochs take milliseconds: this one is still running
    first = started_fit(*long)
    try:
        wait_for(lambda: (RUN / "checkpoints/last.ckpt").exists() or first.poll() is not None, what="a last.ckpt")
        assert first.poll() is None, "the first run ended (its output is above)"
        error = refusal(capsys, lambda: run("fit", *long, "--ckpt_path=last"))  # finds the running run's last.ckpt
        assert f"{RUN} is in use by another command" in error
        assert first.poll() is None, "the first run goes on"
    finally:
        first.kill()
        first.wait()


def test_runs_of_different_configs_or_the_same_one_twice_get_their_own_folders():
    run("fit", *SHORT)
    first = {p: p.read_bytes() for p in RUN.rglob("*") if p.is_file()}
    run("fit", *SHORT)
    run("fit", *SHORT, "--model.lr=0.001")
    assert sorted(p.name for p in Path("runs/tiny").iterdir()) == ["version_0", "version_1", "version_2"]
    assert all(p.read_bytes() == content for p, content in first.items()), "the first run is untouched"


@pytest.mark.slow
def test_two_runs_started_at_the_same_moment_get_different_folders():
    processes = [started_fit(*SHORT) for _ in range(2)]
    for process in processes:
        assert process.wait(timeout=120) == 0, "a run failed (its output is above)"
    folders = sorted(Path("runs/tiny").iterdir())
    assert [p.name for p in folders] == ["version_0", "version_1"]
    assert all(len(list(p.glob("events.out.tfevents.*"))) == 1 for p in folders)


# 2. Nothing is written outside the runs root.
OUTSIDE = [
    (["--name=../../outside"], "must be one folder name"),
    (["--trainer.logger.init_args.name=ABSOLUTE/outside"], "must be one folder name"),
    (["--trainer.logger.init_args.version=../../outside"], "must be one folder name"),
    (["--trainer.logger.init_args.sub_dir=../outside"], "must be one folder name"),
    (["--name=a\nb"], "'a\\nb': must be one folder name (no '/' or control character"),
    (["--name=a\x1b[31m"], "must be one folder name (no '/' or control character"),
    (["--best_checkpoint.filename=../../../best"], "lies outside the run's folder"),
    (["--best_checkpoint.dirpath=shared"], "lies outside the run's folder"),  # two runs would share it
    (["--last_checkpoint.dirpath=runs/tiny/version_9/checkpoints"], "lies outside the run's folder"),
    (["--prediction_writer.filename=ABSOLUTE/predictions.csv"], "lies outside the run's folder"),
    (["--trainer.logger=false"], "a run writes into runs/<name>/version_N through one logger"),
    (["--trainer.logger=null"], "a run writes into runs/<name>/version_N through one logger"),
    (["--trainer.logger=[{class_path: TensorBoardLogger}, {class_path: CSVLogger}]"], "through one logger"),
    # What the OS says, said by the entry point: the path and what to do.
    (["--name=" + "a" * 300], "a name longer than the file system allows"),
    (["--trainer.logger.init_args.save_dir="], "--trainer.logger.init_args.save_dir '': must name the runs root"),
    (["--trainer.logger.init_args.save_dir=notes.txt/runs"], "notes.txt/runs/tiny: a part of the path is a file"),
]


IDS = [c[0][0][:60] for c in OUTSIDE]
# Every day one case per check: a run's name and version (placement.name_run), a control character, a checkpoint's
# filename and dirpath, the prediction file's name, a logger that keeps no run folder (none, two), what the OS says
# (a name too long, a file in the path) and an empty runs root. Slow: a check again with another value or option.
REPEATS = {
    "--trainer.logger.init_args.name=ABSOLUTE/outside": "--name=../../outside",
    "--trainer.logger.init_args.sub_dir=../outside": "--trainer.logger.init_args.version=../../outside",
    "--name=a\x1b[31m": "--name=a\nb",
    "--best_checkpoint.dirpath=shared": "--last_checkpoint.dirpath=runs/tiny/version_9/checkpoints",
    "--trainer.logger=null": "--trainer.logger=false",
}


@pytest.mark.parametrize("args,expected", slow_repeats(OUTSIDE, IDS, REPEATS))
def test_names_that_lead_out_of_the_runs_root_are_refused_before_anything_is_written(args, expected, capsys):
    args = [arg.replace("ABSOLUTE", str(Path.cwd())) for arg in args]
    Path("notes.txt").write_text("a file of yours, not a runs root\n")
    before = snapshot()
    assert expected in refusal(capsys, lambda: run("fit", *SHORT, *args))
    assert not assert_kept(before, snapshot()), "nothing written, not even in runs/"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_runs_root_you_cannot_write_in_is_one_line_and_nothing_is_written(capsys):
    Path("runs").mkdir(mode=0o555)
    assert "runs/tiny: permission denied" in refusal(capsys, lambda: run("fit", *SHORT))
    assert not any(Path("runs").iterdir())


def test_an_immutable_runs_root_is_one_line_and_nothing_is_written(capsys):
    """EPERM, which root meets too (chattr +i): the entry point's one handler names the folder."""
    Path("runs").mkdir()
    with immutable("runs"):
        error = refusal(capsys, lambda: run("fit", *SHORT))
    assert error.startswith("error: runs/tiny") and "operation not permitted" in error, error
    assert not any(Path("runs").iterdir())


@pytest.mark.parametrize("empty", ["runs", "runs/tiny"])
def test_a_refused_command_keeps_the_empty_folders_that_were_yours(empty, capsys):
    Path(empty).mkdir(parents=True)
    # Refused after the run folder was claimed: the monitored metric is not logged (checked at the sanity check).
    assert "val/nope" in refusal(capsys, lambda: run("fit", *SHORT, "--best_checkpoint.monitor=val/nope"))
    assert sorted(map(str, Path(".").rglob("*"))) == sorted(map(str, [Path(empty), *Path(empty).parents][:-1]))


def test_evaluating_a_checkpoint_that_lies_outside_the_runs_root_writes_a_new_run_inside_it(runs):
    loose = Path("elsewhere/checkpoints/last.ckpt")  # laid out like a run, but not under runs/
    loose.parent.mkdir(parents=True)
    shutil.copy(RUN / "checkpoints/last.ckpt", loose)
    before = snapshot()
    run("test", f"--ckpt_path={loose}")
    new = assert_kept(before, snapshot())
    assert {Path(p).parent for p in new} >= {Path("runs/tiny/version_1")}, new


class DeleteRunAt(Callback):
    """Deletes the run folder as the given global step ends, as `rm -r runs/...` by hand or a clean-up job would."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_end(self, trainer, *args) -> None:
        if trainer.global_step == self.step:
            # A writer thread (TensorBoard's, a background save) may add a file while rmtree empties the folder,
            # which then ends in "Directory not empty" (seen in CI): delete until it is gone, as a clean-up job would.
            folder = Path(trainer.logger.log_dir)
            while folder.exists():
                shutil.rmtree(folder, ignore_errors=True)


def test_a_run_folder_deleted_while_it_trains_is_one_line_naming_it(capsys):
    deleting = [DeleteRunAt(step=2)]
    fit = ["fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=4"]
    line = refusal(capsys, lambda: run(*fit, callbacks=deleting))
    assert line.startswith("error: runs/tiny/version_0") and "no such file or folder" in line
    # No writer's traceback either (TensorBoard's thread finds its events file gone first): refusal() checks stderr.


def test_a_process_forked_while_a_run_is_held_does_not_hold_it_after_the_command(tmp_path):
    # A DataLoader's workers are forked mid-command and may outlive it: holding the lock's copy, they refused the next
    # command on the run in the same process (verify's predict after its validate, with num_workers=2).
    run = RunFolder.claim(tmp_path / "exp", 0)
    (run.path / "config.yaml").write_text("{}")  # what the command wrote: the folder stays
    (started, up), (wait, go) = os.pipe(), os.pipe()
    child = os.fork()
    if child == 0:  # a worker: alive until the parent has tried the lock again
        os.write(up, b"1")  # the fork's handlers have run
        os.read(wait, 1)
        os._exit(0)
    try:
        assert os.read(started, 1) == b"1"
        run.release(refused=False)
        os.close(lock_run(run.path))  # free: the child's copy of the lock was closed as it was forked
    finally:
        os.write(go, b"1")
        os.waitpid(child, 0)
