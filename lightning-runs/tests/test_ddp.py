"""DDP on CPU over gloo, launched as users launch it: by Lightning, by torchrun, as two nodes, and by SLURM (srun).

Each launcher must end with one run written once by rank zero and the same numbers as the others; those numbers must
equal a single process evaluating the same checkpoint; a run crashed under DDP resumes to an uninterrupted one's
weights. The task: TypedClassifier (an evaluation loss over every point of every rank, a schedule the trainer's step
count sizes) on TinyShards (every split sharded by rank, evaluation shards of unequal size, unpadded).
"""

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny_launchers import fake_srun, free_port, launch, torchrun, two_nodes
from tiny_runs import QUIET, assert_same_checkpoint, load, process_environment, run, scalars

pytestmark = pytest.mark.slow  # every test reads or makes a DDP run

TASK = ["--model=tiny_typed.TypedClassifier", "--data=tiny_shards.TinyShards"]
TWO_EPOCHS = [*QUIET, *TASK, "--trainer.max_epochs=2"]
PER_EPOCH = 6  # TinyShards' 204 training points padded to 2 x 102: 6 full batches of 16 on each rank
STEPS = 2 * PER_EPOCH
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}  # float32 sums in a different order; accuracies must match exactly


def tiny(*args: str) -> list[str]:
    return [sys.executable, "-m", "tiny_tasks", *args]


def with_lightning(home: Path) -> list[str]:
    return launch(home, tiny("fit", *TWO_EPOCHS, "--trainer.strategy=ddp", "--trainer.devices=2"))


def with_torchrun(home: Path) -> list[str]:
    fit = ["-m", "tiny_tasks", "fit", *TWO_EPOCHS, "--trainer.strategy=ddp", "--trainer.devices=2"]
    return launch(home, torchrun("--standalone", "--nproc_per_node=2", *fit))


def as_two_nodes(home: Path) -> list[str]:
    fit = ["-m", "tiny_tasks", "fit", *TWO_EPOCHS, "--trainer.strategy=ddp", "--trainer.num_nodes=2"]
    return launch(home, *two_nodes(fit))


def with_slurm(home: Path) -> list[str]:
    """srun starting 2 tasks of a 1-node job (job 4242), as a batch script would, with a stand-in srun: each task
    finds its rank in SLURM's variables; the run is named for the job, which `--ckpt_path last` then resumes."""
    job = {
        "SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "tiny", "SLURM_NTASKS": "2", "SLURM_NTASKS_PER_NODE": "2",
        "SLURM_NNODES": "1", "SLURM_JOB_NUM_NODES": "1", "SLURM_NODELIST": "127.0.0.1",
        "MASTER_PORT": str(free_port()),  # else derived from the job id: could collide with a parallel test
    }  # fmt: skip
    env = {**process_environment(), **job, "PATH": f"{fake_srun(home)}:{os.environ['PATH']}"}
    fit = ["fit", *TWO_EPOCHS, "--trainer.strategy=ddp", "--trainer.devices=2", "--trainer.num_nodes=1"]
    fit += ["--trainer.logger.init_args.version=slurm-4242", "--ckpt_path=last"]
    return launch(home, ["srun", *tiny(*fit)], env=env)


LAUNCHERS = {"lightning": with_lightning, "torchrun": with_torchrun, "two_nodes": as_two_nodes, "slurm": with_slurm}


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """The same 2-epoch fit under each launcher: its run folder and everything the processes printed."""
    results = {}
    for name, launcher in LAUNCHERS.items():
        home = tmp_path_factory.mktemp(name)
        output = "\n".join(launcher(home))
        (run_dir,) = home.glob("runs/*/*")
        results[name] = run_dir, output
    return results


@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_each_launcher_ends_with_one_run_written_once_by_rank_zero(launched, launcher):
    run_dir, output = launched[launcher]
    assert "GLOBAL_RANK: 0, MEMBER: 1/2" in output and "GLOBAL_RANK: 1, MEMBER: 2/2" in output
    assert run_dir.name == ("slurm-4242" if launcher == "slurm" else "version_0")
    assert [p.name for p in run_dir.parent.iterdir()] == [run_dir.name], "one run folder for all ranks"
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 1
    assert sorted(p.name for p in run_dir.glob("*.yaml")) == ["config.yaml", "hparams.yaml"]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["best.ckpt", "last.ckpt"]
    assert not [p for p in run_dir.rglob("*-[0-9]*.*")], "no second copy of any file (free_path's -N names)"
    assert load(run_dir / "checkpoints/last.ckpt")["global_step"] == STEPS, "steps of a 2-process world"
    assert [step for step, _ in scalars(run_dir, "train/loss")] == list(range(STEPS)), "each step logged once"


@pytest.mark.parametrize("tag", ["train/loss", "val/loss", "val/acc", "lr"])
def test_every_launcher_logs_the_same_metrics(launched, tag):
    reference = scalars(launched["lightning"][0], tag)
    for launcher in LAUNCHERS:
        logged = scalars(launched[launcher][0], tag)
        assert [step for step, _ in logged] == [step for step, _ in reference], launcher
        values, expected = (torch.tensor([value for _, value in s]) for s in (logged, reference))
        if tag.endswith("acc"):
            assert torch.equal(values, expected), launcher
        torch.testing.assert_close(values, expected, **TOLERANCE, msg=lambda m, name=launcher: f"{name}: {m}")


def test_the_learning_rate_schedule_completes_under_ddp(launched):
    # The total step count is the 2-process world's (the sharded batches' length): after the last step, min_lr.
    scheduler = load(launched["lightning"][0] / "checkpoints/last.ckpt")["lr_schedulers"][0]
    assert scheduler["last_epoch"] == STEPS
    assert scheduler["_last_lr"] == pytest.approx([1e-5], abs=1e-12)


@pytest.fixture
def checkpoint(launched, tmp_path) -> Path:
    """The DDP run's final checkpoint, copied out of its run so that evaluations leave that run untouched."""
    return Path(shutil.copy(launched["lightning"][0] / "checkpoints/last.ckpt", tmp_path / "model.ckpt"))


def test_ddp_validation_equals_a_single_process_validating_the_same_checkpoint(launched, checkpoint):
    # The fit's last validation ran on 2 ranks with 2 batches and 1; this one runs on 1 with 3.
    single = run("validate", *TASK, "--ckpt_path", str(checkpoint)).trainer.callback_metrics
    run_dir = launched["lightning"][0]
    assert scalars(run_dir, "val/acc")[-1][1] == single["val/acc"].item()
    assert scalars(run_dir, "val/loss")[-1][1] == pytest.approx(single["val/loss"].item(), rel=1e-5)


def test_ddp_test_equals_a_single_process_testing_the_same_checkpoint(checkpoint, tmp_path):
    launch(tmp_path, tiny("test", *QUIET, *TASK, "--trainer.strategy=ddp", "--trainer.devices=2",
                          "--ckpt_path", str(checkpoint)))  # fmt: skip
    single = run("test", *TASK, "--ckpt_path", str(checkpoint)).trainer.callback_metrics
    (ddp_run,) = tmp_path.glob("runs/*/version_0")  # the single process's is version_1
    assert scalars(ddp_run, "test/acc")[-1][1] == single["test/acc"].item()
    assert scalars(ddp_run, "test/loss")[-1][1] == pytest.approx(single["test/loss"].item(), rel=1e-5)


def test_ddp_predict_writes_one_file_in_input_order_like_a_single_process(checkpoint, tmp_path):
    launch(tmp_path, tiny("predict", *QUIET, *TASK, "--trainer.strategy=ddp", "--trainer.devices=2",
                          "--ckpt_path", str(checkpoint)))  # fmt: skip
    run("predict", *TASK, "--ckpt_path", str(checkpoint))
    written = sorted(tmp_path.glob("runs/*/version_*/predictions*.csv"))
    assert [p.relative_to(p.parents[1]).as_posix() for p in written] == [
        "version_0/predictions.csv",  # both ranks' shards, from rank zero
        "version_1/predictions.csv",  # the single process
    ]
    ddp, single = (rows(path) for path in written)
    assert len(ddp) == 33 and [row["index"] for row in ddp] == [str(i) for i in range(33)]  # TinyShards' test split
    assert list(ddp[0]) == list(single[0]) == ["index", "output_0", "output_1", "output_2"]  # softmax: (N, 3)
    for a, b in zip(ddp, single, strict=True):
        assert [float(a[k]) for k in a] == pytest.approx([float(b[k]) for k in b], rel=1e-5)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as file:
        return list(csv.DictReader(file))


def test_two_process_ddp_resume_at_an_epoch_boundary_is_exact(tmp_path):
    ddp = tiny("fit", *QUIET, *TASK, "--trainer.strategy=ddp", "--trainer.devices=2", "--trainer.max_epochs=3")
    (tmp_path / "reference").mkdir()
    launch(tmp_path / "reference", ddp)
    crash = [
        "--trainer.callbacks+=lightning_runs.testing.CrashAt",
        f"--trainer.callbacks.step={2 * PER_EPOCH + PER_EPOCH // 2}",
    ]
    crashed = subprocess.run([*ddp, *crash], capture_output=True, text=True, timeout=300, env=process_environment())
    (last,) = Path("runs").glob("*/version_0/checkpoints/last.ckpt")
    # Halfway through the third epoch: last.ckpt is the second's end.
    assert crashed.returncode != 0 and load(last)["global_step"] == 2 * PER_EPOCH, crashed.stderr[-2000:]
    launch(Path.cwd(), [*ddp, "--ckpt_path=last"])
    (reference,) = (tmp_path / "reference").glob("runs/*/version_0/checkpoints/last.ckpt")
    assert_same_checkpoint(load(reference), load(last))
