"""Never lose a run: exact resume, safe checkpoints, and one clear line for bad input."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lightning_runs.checkpoints.io import AtomicCheckpointIO
from support import (
    DEFAULT,
    QUIET,
    assert_same_checkpoint,
    ddp_environment,
    load,
    refusal,
    run,
    run_subprocess,
    scalars,
    start,
    steps_per_epoch,
    wait_for,
    working_directory,
)

RUN = Path("runs/digits/version_0")
LAST = RUN / "checkpoints/last.ckpt"


def in_dir(path: Path, *args: str):
    """`run(*args)` with `path` as the working directory."""
    path.mkdir(parents=True, exist_ok=True)
    with working_directory(path):
        return run(*args)


def assert_same_logs(reference: Path, resumed: Path, from_step: int) -> None:
    """Every loss and LR the resumed run logged from `from_step` on equals the uninterrupted run's."""
    for tag in ("train/loss", "lr/decay", "lr/no_decay"):
        expected = dict(scalars(reference, tag))
        logged = [(step, value) for step, value in scalars(resumed, tag) if step >= from_step]
        assert logged, tag
        assert all(expected[step] == value for step, value in logged), tag


def kill_after_first_checkpoint(*args: str) -> int:
    """Start a fit, kill -9 it once it has saved last.ckpt, return the step that checkpoint holds."""
    process = start("fit", "--config", DEFAULT, *QUIET, *args)
    wait_for(lambda: LAST.exists() or process.poll() is not None, what="the first checkpoint")
    process.kill()
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    return load(LAST)["global_step"]


# 1, 3, 11. Resume at an epoch boundary is exact, and the same command finds its own checkpoint.
@pytest.mark.slow
@pytest.mark.parametrize("precision", ["32", "16-mixed"])
def test_resume_after_kill_9_is_exact(precision, tmp_path):
    args = ["--trainer.max_epochs=6", f"--trainer.precision={precision}"]
    in_dir(tmp_path / "reference", "fit", *args)
    saved_step, per_epoch = kill_after_first_checkpoint(*args), steps_per_epoch()
    assert 0 < saved_step < 6 * per_epoch and saved_step % per_epoch == 0

    resumed = run("fit", *args, "--ckpt_path=last")
    assert resumed.trainer.global_step == 6 * per_epoch
    reference = tmp_path / "reference" / RUN
    assert_same_checkpoint(load(reference / "checkpoints/last.ckpt"), load(LAST))
    assert_same_logs(reference, RUN, from_step=saved_step)


# 2. Resume mid-epoch is exact: the loader resumes at the right batch.
@pytest.mark.slow
def test_resume_mid_epoch_from_a_step_checkpoint_is_exact(tmp_path):
    every = 5
    args = ["--trainer.max_epochs=3", f"--last_checkpoint.every_n_train_steps={every}"]
    crash = steps_per_epoch() + 11  # in the second epoch, past one of its step checkpoints
    saved = crash - crash % every  # that step checkpoint, mid-epoch
    in_dir(tmp_path / "reference", "fit", *args)
    with pytest.raises(RuntimeError, match=f"crash at step {crash}"):
        run("fit", *args, "--trainer.callbacks+=support.CrashAt", f"--trainer.callbacks.step={crash}")
    assert load(LAST)["global_step"] == saved

    run("fit", *args, "--ckpt_path=last")
    reference = tmp_path / "reference" / RUN
    assert_same_checkpoint(load(reference / "checkpoints/last.ckpt"), load(LAST))
    assert_same_logs(reference, RUN, from_step=saved)


# 4. Checkpoint writes survive a kill.
WRITER = """
import sys, torch
from lightning_runs.checkpoints.io import AtomicCheckpointIO
io, n = AtomicCheckpointIO(), 0
while True:
    n += 1
    io.save_checkpoint({"state_dict": {"w": torch.full((4_000_000,), float(n))}, "n": n}, sys.argv[1])
"""


@pytest.mark.slow
def test_a_kill_during_checkpoint_writes_leaves_a_whole_checkpoint_and_no_temp_files(tmp_path):
    target = tmp_path / "checkpoints" / "last.ckpt"
    env = ddp_environment(TMPDIR="/dev/shm")  # $TMPDIR on another filesystem changes nothing
    for delay in (0.3, 0.5, 0.7, 0.9, 1.1, 1.3):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], env=env)
        wait_for(target.exists, what="a first checkpoint")
        try:
            writer.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            writer.kill()
            writer.wait()
        checkpoint = torch.load(target, weights_only=True)
        assert torch.equal(checkpoint["state_dict"]["w"], torch.full((4_000_000,), float(checkpoint["n"])))
        assert [p.name for p in target.parent.iterdir()] == ["last.ckpt"]


def test_non_finite_weights_are_never_written(tmp_path):
    with pytest.raises(FloatingPointError, match="non-finite"):
        AtomicCheckpointIO().save_checkpoint({"state_dict": {"w": torch.tensor([1.0, float("nan")])}}, tmp_path / "x")
    assert not list(tmp_path.iterdir())


# 5. Bad checkpoints: a non-zero exit naming the file and what is wrong; never a silent fresh start.
def bad_checkpoints(folder: Path) -> dict[str, tuple[Path, str]]:
    real = folder / "real.ckpt"
    torch.save({"state_dict": {}, "epoch": 0}, real)
    data = real.read_bytes()
    files = {"truncated": data[: len(data) // 2], "empty": b"", "random": os.urandom(4096)}
    for name, content in files.items():
        (folder / f"{name}.ckpt").write_bytes(content)
    return {
        "truncated": (folder / "truncated.ckpt", "not a readable checkpoint"),
        "empty": (folder / "empty.ckpt", "not a readable checkpoint"),
        "random": (folder / "random.ckpt", "not a readable checkpoint"),
        "missing": (folder / "missing.ckpt", "no such file"),
    }


@pytest.mark.parametrize("kind", ["truncated", "empty", "random", "missing"])
@pytest.mark.parametrize("subcommand", ["fit", "test"])
def test_a_bad_checkpoint_is_refused_with_its_name_and_the_problem(kind, subcommand, tmp_path, capsys):
    path, problem = bad_checkpoints(tmp_path)[kind]
    with pytest.raises(SystemExit) as exit_:
        run(subcommand, f"--ckpt_path={path}")
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: ") and str(path) in error and problem in error
    assert not Path("runs").exists(), "nothing started"


def test_a_corrupt_last_checkpoint_is_refused_not_skipped(capsys):
    LAST.parent.mkdir(parents=True)
    LAST.write_bytes(b"\x00" * 100)
    with pytest.raises(SystemExit) as exit_:
        run("fit", "--ckpt_path=last")
    assert exit_.value.code == 2 and str(LAST) in capsys.readouterr().err


# 6. Bad configs exit 2 at parse time with one clear line, before any run directory exists.
@pytest.mark.parametrize(
    "args,expected",
    [
        (["--model.learning_rate=0.1"], "unknown option --model.learning_rate"),
        (["--trainer.max_epochs=ten"], "--trainer.max_epochs: "),
        (["--config=missing.yaml"], "missing.yaml"),
        (["--model.network=project.model.NoSuchNet"], "NoSuchNet"),
        (["--model.lr=0"], "--model.lr: "),
        (["--model.lr=-0.1"], "--model.lr: "),
        (["--data.batch_size=0"], "--data.batch_size: "),
        (["--data.val_fraction=0.5", "--data.test_fraction=0.5"], "val_fraction + test_fraction must be below 1"),
        (["--model.warmup_fraction=1.5"], "--model.warmup_fraction: "),
    ],
)
def test_a_bad_config_exits_2_with_one_clear_line_before_creating_anything(args, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        run("fit", *args)
    assert exit_.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and expected in errors[0]
    assert not Path("runs").exists() or not any(Path("runs").rglob("*")), "no run directory"


# 7. Checkpoint versus command line: a contradiction is refused; a data setting typed for an evaluation wins.
def test_checkpoint_settings_win_and_contradicting_them_on_the_command_line_is_refused_or_reported(capsys):
    run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=3", "--model.lr=0.002", "--data.seed=3")
    # Named by its path: `last` and `best` find only a run of this command's recipe
    # (lightning-runs/tests/test_run_names.py).
    error = refusal(capsys, lambda: run("fit", "--trainer.max_epochs=2", f"--ckpt_path={LAST}", "--model.lr=0.05"))
    assert "--model.lr 0.05 (checkpoint: 0.002)" in error and "a resumed run keeps its checkpoint's settings" in error

    # An evaluation keeps the checkpoint's weights, so its model settings; a data setting typed for it wins, said.
    error = refusal(capsys, lambda: run("test", f"--ckpt_path={LAST}", "--model.lr=0.05", "--data.seed=0"))
    assert error.startswith("error: --model.lr 0.05 (checkpoint: 0.002): an evaluation uses the checkpoint's model")
    evaluated = run("test", f"--ckpt_path={LAST}", "--data.seed=0")
    assert "Evaluating with --data.seed 0 (checkpoint: 3), as given" in capsys.readouterr().out
    assert (evaluated.model.hparams.lr, evaluated.datamodule.hparams.seed) == (0.002, 0)
    saved = (RUN / "config.yaml").read_text()
    assert "lr: 0.002" in saved and "seed: 3" in saved


# 8. NaN/Inf stops the run at that step; no checkpoint holds a non-finite tensor.
def test_a_nan_loss_stops_the_run_at_that_step_with_a_clear_message(capsys):
    with pytest.raises(SystemExit) as exit_:
        run("fit", "--trainer.max_epochs=3", "--model.network=support.NaNAfter", "--model.network.step=30")
    assert exit_.value.code == 1
    assert "step 30: the loss or its gradients are NaN/Inf" in capsys.readouterr().err
    run_dir = Path("runs/digits-nanafter/version_0")  # named for its network (lightning_runs.folders.naming)
    assert max(step for step, _ in scalars(run_dir, "train/loss")) == 29, "stopped at step 30, its NaN never logged"
    for path in (run_dir / "checkpoints").glob("*.ckpt"):
        weights = load(path)["state_dict"]
        assert all(torch.isfinite(t).all() for t in weights.values() if t.is_floating_point()), path


# 9. SIGTERM saves a resumable checkpoint, flushes the logs and exits non-zero; resuming from it is exact.
@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_exits_143_and_the_resume_is_exact(tmp_path):
    args = ["--trainer.max_epochs=6"]
    in_dir(tmp_path / "reference", "fit", *args)
    process = start("fit", "--config", DEFAULT, *QUIET, *args)
    wait_for(lambda: LAST.exists() or process.poll() is not None, what="the first checkpoint")
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 143, err[-2000:]
    assert "stopped by SIGTERM at step" in err and "resume with --ckpt_path last" in err
    stopped_at = load(LAST)["global_step"]
    # Flushed up to the step in flight: that step is in the checkpoint, its scalars were still pending.
    assert [step for step, _ in scalars(RUN, "train/loss")] == list(range(stopped_at - 1))

    run("fit", *args, "--ckpt_path=last")
    reference = tmp_path / "reference" / RUN
    assert_same_checkpoint(load(reference / "checkpoints/last.ckpt"), load(LAST))
    assert_same_logs(reference, RUN, from_step=stopped_at)


# 10. Crashes keep the logs.
def test_a_crash_keeps_every_scalar_logged_before_it():
    with pytest.raises(RuntimeError, match="crash at step 40"):
        run("fit", "--trainer.max_epochs=3", "--trainer.callbacks+=support.CrashAt", "--trainer.callbacks.step=40")
    assert [step for step, _ in scalars(RUN, "train/loss")] == list(range(40))
    assert [step for step, _ in scalars(RUN, "lr/decay")] == list(range(40))


@pytest.mark.slow
def test_kill_9_loses_at_most_the_step_in_flight_and_the_events_stay_readable():
    process = start("fit", "--config", DEFAULT, *QUIET, "--trainer.max_epochs=6")
    wait_for(lambda: LAST.exists() or process.poll() is not None, what="the first checkpoint")
    wait_for(lambda: len(scalars(RUN, "train/loss")) > 30, what="30 logged steps")
    process.kill()
    process.wait()
    steps = [step for step, _ in scalars(RUN, "train/loss")]
    assert steps == list(range(len(steps))) and len(steps) > 30


# 11. Safe loading.
@pytest.mark.parametrize(
    "tamper",
    [
        {"_instantiator": "os.system"},
        {"network": "os.system"},
        {"network": {"class_path": "os.system", "init_args": {}}},
    ],
)
def test_a_checkpoint_whose_hyperparameters_name_a_callable_is_refused(tamper, tmp_path, capsys, monkeypatch):
    run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2")
    checkpoint = load(LAST)
    checkpoint["hyper_parameters"].update(tamper)
    torch.save(checkpoint, tmp_path / "tampered.ckpt")
    monkeypatch.setattr(os, "system", lambda *_: pytest.fail("os.system was called"))
    with pytest.raises(SystemExit) as exit_:
        run("test", f"--ckpt_path={tmp_path}/tampered.ckpt")
    assert exit_.value.code == 2 and "refusing to load" in capsys.readouterr().err


# 12. DDP faults: the kill of a rank is in test_ddp_faults.py; the 2-process resume is here.
@pytest.mark.slow
def test_two_process_ddp_resume_at_an_epoch_boundary_is_exact(tmp_path):
    ddp = ["--config", DEFAULT, *QUIET, "--trainer.strategy=ddp", "--trainer.devices=2", "--trainer.max_epochs=3"]
    (tmp_path / "reference").mkdir()
    reference = run_subprocess("fit", *ddp, cwd=tmp_path / "reference")
    assert reference.returncode == 0, reference.stderr[-2000:]
    per_epoch = steps_per_epoch(world_size=2)
    crash = ["--trainer.callbacks+=support.CrashAt", f"--trainer.callbacks.step={2 * per_epoch + per_epoch // 2}"]
    crashed = run_subprocess("fit", *ddp, *crash)  # halfway through the third epoch: last.ckpt is the second's end
    assert crashed.returncode != 0 and load(LAST)["global_step"] == 2 * per_epoch, crashed.stderr[-2000:]
    resumed = run_subprocess("fit", *ddp, "--ckpt_path=last")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_checkpoint(load(tmp_path / "reference" / RUN / "checkpoints/last.ckpt"), load(LAST))


# 13. Two runs never clobber each other.
def test_runs_of_different_configs_or_the_same_one_twice_get_their_own_folders():
    args = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
    run("fit", *args)
    first = {p: p.read_bytes() for p in RUN.rglob("*") if p.is_file()}
    run("fit", *args)
    run("fit", *args, "--model.lr=0.001")
    assert sorted(p.name for p in Path("runs/digits").iterdir()) == ["version_0", "version_1", "version_2"]
    assert all(p.read_bytes() == content for p, content in first.items()), "the first run is untouched"


@pytest.mark.slow
def test_two_runs_started_at_the_same_moment_get_different_folders():
    args = ["fit", "--config", DEFAULT, *QUIET, "--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
    processes = [start(*args) for _ in range(2)]
    for process in processes:
        assert process.wait(timeout=120) == 0, process.stderr.read()[-2000:]
    folders = sorted(Path("runs/digits").iterdir())
    assert [p.name for p in folders] == ["version_0", "version_1"]
    assert all(len(list(p.glob("events.out.tfevents.*"))) == 1 for p in folders)
