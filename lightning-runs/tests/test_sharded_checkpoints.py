"""Sharded checkpoints (checkpoints/sharded.py): a folder per checkpoint, whole or refused. A save killed before its
swap leaves the previous folder in place; every shard carries its save's identity, so a shard copied from another save
or a missing one is refused in one line by whatever reads it (test, predict, export); and a sharded run resumes only as
it was started (FSDP, its checkpoint form), refused before training otherwise.

The first tests save in one process (torch.distributed not started); the rest fit the tiny task with FSDP on 2 CPU
processes (slow). The template's tests/template/test_fsdp.py resumes such fits bit for bit after kill -9 and SIGTERM."""

import os
import shutil
import signal
from pathlib import Path

import pytest
import torch
from tiny_runs import QUIET, command, refusal, run, snapshot

from lightning_runs.checkpoints import read_checkpoint, sharded
from lightning_runs.errors import UsageError, main
from lightning_runs.tools import export


class OneProcess:
    """What save_sharded asks of a strategy, for a world of one."""

    global_rank, world_size = 0, 1

    def broadcast(self, value):
        return value

    def barrier(self) -> None: ...


def checkpoint(step: int) -> dict:
    weight = torch.full((3, 2), float(step))
    return {
        "state_dict": {"net.weight": weight, "net.bias": torch.zeros(3)},
        "optimizer_states": [
            {
                "state": {"net.weight": {"step": torch.tensor(float(step)), "exp_avg": weight * 2}},
                "param_groups": [{"lr": 0.1, "params": ["net.weight", "net.bias"]}],
            }
        ],
        "global_step": step,
        "epoch": 0,
        "pytorch-lightning_version": "2.6.6",
    }


def partial(path: Path) -> Path:
    return path.with_name(f".{path.name}.partial")


def test_a_sharded_save_reads_back_as_a_single_file_checkpoint_reads(tmp_path):
    path = tmp_path / "last.ckpt"
    sharded.save_sharded(OneProcess(), checkpoint(3), path)
    assert sharded.is_sharded(path) and not partial(path).exists()
    read = read_checkpoint(path)
    assert read["global_step"] == 3
    torch.testing.assert_close(read["state_dict"]["net.weight"], torch.full((3, 2), 3.0))
    state = read["optimizer_states"][0]
    assert state["param_groups"][0]["params"] == [0, 1], "keyed by index, as Optimizer.state_dict() keys it"
    torch.testing.assert_close(state["state"][0]["exp_avg"], torch.full((3, 2), 6.0))


def test_a_save_replaces_the_previous_folder_and_a_file_of_the_same_name(tmp_path):
    path = tmp_path / "last.ckpt"
    path.write_bytes(b"a single-file checkpoint of an earlier fit")
    sharded.save_sharded(OneProcess(), checkpoint(1), path)
    sharded.save_sharded(OneProcess(), checkpoint(2), path)
    assert read_checkpoint(path)["global_step"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"], "nothing left beside it"


@pytest.mark.parametrize("when", ["after the shards", "after meta.pt"])
def test_a_save_killed_before_its_swap_leaves_the_previous_checkpoint_whole(tmp_path, when):
    path = tmp_path / "last.ckpt"
    sharded.save_sharded(OneProcess(), checkpoint(1), path)
    child = os.fork()
    if child == 0:  # the writer, killed with -9 where the swap would start
        killed = lambda *args: os.kill(os.getpid(), signal.SIGKILL)  # noqa: E731
        if when == "after the shards":
            sharded.write_atomically = killed
        else:
            sharded.swap_in = killed
        sharded.save_sharded(OneProcess(), checkpoint(2), path)
        os._exit(0)  # not reached: the save was killed
    _, status = os.waitpid(child, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, "the save was not killed"
    assert partial(path).is_dir(), "the killed save had written its shards"
    assert read_checkpoint(path)["global_step"] == 1, "the previous checkpoint, whole"
    torch.testing.assert_close(read_checkpoint(path)["state_dict"]["net.weight"], torch.full((3, 2), 1.0))
    sharded.save_sharded(OneProcess(), checkpoint(3), path)  # the next save clears what the killed one left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]
    assert read_checkpoint(path)["global_step"] == 3


def test_every_shard_carries_its_saves_identity_and_a_shard_of_another_save_is_refused(tmp_path):
    a, b = tmp_path / "a.ckpt", tmp_path / "b.ckpt"
    sharded.save_sharded(OneProcess(), checkpoint(1), a)
    sharded.save_sharded(OneProcess(), checkpoint(1), b)  # the same step, another save
    assert sharded.check_whole(a)["global_step"] == 1
    shutil.copy(b / "__0_0.distcp", a / "__0_0.distcp")
    with pytest.raises(UsageError, match=r"a\.ckpt: the shard of rank 0 comes from another save than its meta\.pt"):
        read_checkpoint(a)


def test_a_missing_shard_is_refused_naming_it(tmp_path):
    path = tmp_path / "last.ckpt"
    sharded.save_sharded(OneProcess(), checkpoint(1), path)
    (path / "__0_0.distcp").unlink()
    with pytest.raises(UsageError, match=r"last\.ckpt: its shard __0_0\.distcp is missing"):
        read_checkpoint(path)


def test_a_folder_that_is_not_a_checkpoint_is_refused_in_one_line(tmp_path):
    (tmp_path / "folder.ckpt").mkdir()
    (tmp_path / "folder.ckpt" / "notes.txt").write_text("not shards")
    with pytest.raises(UsageError, match=r"folder\.ckpt: a folder that is not a whole sharded checkpoint"):
        read_checkpoint(tmp_path / "folder.ckpt")


# A sharded run of the tiny task with FSDP on 2 CPU processes, crashed in its second epoch: resumable, its last.ckpt/
# and best.ckpt/ folders the first epoch's (two saves of the same step).
FSDP = ["--trainer.strategy.class_path=lightning_runs.parallel.FSDP", "--trainer.devices=2"]
SHARDED = [*FSDP, "--trainer.strategy.init_args.save_distributed_checkpoint=true"]
CRASH = ["--trainer.max_epochs=3", "--trainer.callbacks+=lightning_runs.testing.CrashAt", "--trainer.callbacks.step=8"]
CHECKPOINTS = Path("runs/tiny/version_0/checkpoints")


@pytest.fixture(scope="module")
def sharded_run(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("sharded")
    crashed = command("fit", *QUIET, *SHARDED, *CRASH, cwd=home)
    assert crashed.returncode != 0 and "crash at step 8" in crashed.stderr, crashed.stderr[-3000:]
    assert all(sharded.is_sharded(home / CHECKPOINTS / name) for name in ("best.ckpt", "last.ckpt"))
    return home / "runs"


@pytest.fixture
def runs(sharded_run) -> Path:
    shutil.copytree(sharded_run, "runs")
    return Path("runs")


ONE_PROCESS = ["--trainer.strategy=auto", "--trainer.devices=1"]  # an evaluation is the run's own config: FSDP on 2


@pytest.mark.slow
def test_its_checkpoint_tests_predicts_and_exports_in_one_process(runs):
    best = str(CHECKPOINTS / "best.ckpt")
    assert run("test", "--ckpt_path", best, *ONE_PROCESS).trainer.callback_metrics["test/acc"] > 0
    run("predict", "--ckpt_path", best, *ONE_PROCESS)
    assert len((CHECKPOINTS.parent / "predictions.csv").read_text().splitlines()) == 1 + 32
    assert main(lambda: export.main(None, ["--ckpt_path", best])).is_file()


def exported(ckpt: str):
    return main(lambda: export.main(None, ["--ckpt_path", ckpt]))


@pytest.mark.slow
@pytest.mark.parametrize("how", ["a shard of another save", "a missing shard"])
def test_a_shard_of_another_save_or_a_missing_one_is_refused_by_test_predict_and_export(runs, how, capsys):
    best = CHECKPOINTS / "best.ckpt"
    if how == "a missing shard":
        (best / "__1_0.distcp").unlink()
        said = f"error: {best}: its shard __1_0.distcp is missing; give the folder as its fit saved it"
    else:  # last.ckpt/ is another save of the same step
        shutil.copy(CHECKPOINTS / "last.ckpt" / "__1_0.distcp", best / "__1_0.distcp")
        said = (
            f"error: {best}: the shard of rank 1 comes from another save than its meta.pt; give the folder as its fit"
            " saved it, every shard from that save"
        )
    for subcommand in ("test", "predict"):
        reads = lambda: run(subcommand, "--ckpt_path", str(best), *ONE_PROCESS)  # noqa: B023, E731 - called at once
        before = snapshot()
        assert refusal(capsys, reads) == said
        assert snapshot() == before, "nothing written, in the run or beside it"
    assert refusal(capsys, lambda: exported(str(best))) == said


@pytest.mark.slow
@pytest.mark.parametrize(
    ("resumed_as", "said"),
    [
        (FSDP, "--trainer.strategy.save_distributed_checkpoint false (the run: true)"),
        (["--trainer.strategy=ddp", "--trainer.devices=2"], "--trainer.strategy ddp (the run: null)"),
        ([], "--trainer.strategy.class_path null (the run: lightning_runs.parallel.FSDP)"),
    ],
    ids=["one file", "ddp", "no fsdp"],
)
def test_a_sharded_run_resumed_in_another_form_or_strategy_is_refused_before_training(sharded_run, resumed_as, said):
    """Lightning would train, then delete the sharded last.ckpt/ and best.ckpt/ on every rank and crash
    (IsADirectoryError). The resume's comparison of the run's config.yaml with the command's refuses it first."""
    home = sharded_run.parent
    before = snapshot(home)
    resumed = command("fit", *QUIET, *resumed_as, *CRASH[:1], "--ckpt_path=last", cwd=home)
    errors = [line for line in resumed.stderr.splitlines() if line.startswith("error:")]
    assert resumed.returncode == 2 and len(errors) == 1 and said in errors[0], resumed.stderr[-3000:]
    assert errors[0].endswith("a resumed run continues runs/tiny/version_0 as it was started; drop --ckpt_path to start"
                              " a new run with these")  # fmt: skip
    assert snapshot(home) == before, "nothing trained, nothing written"


def test_a_truncated_shard_is_one_line_from_the_entry_points_handler(tmp_path, capsys):
    """torch.distributed.checkpoint's CheckpointException is a BaseException: it passes `except Exception`."""
    path = tmp_path / "last.ckpt"
    sharded.save_sharded(OneProcess(), checkpoint(1), path)
    shard = path / "__0_0.distcp"
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    error = refusal(capsys, lambda: main(lambda: read_checkpoint(path)))
    assert error.startswith(f"error: {path}: a shard could not be read (") and error.endswith("give a whole checkpoint")


@pytest.mark.parametrize("damage", ["truncated", "empty", "binary"])
@pytest.mark.parametrize("name", [sharded.METADATA, sharded.SHARDS_METADATA])
def test_a_damaged_meta_pt_or_shard_index_is_one_line_naming_it(tmp_path, capsys, name, damage):
    """torch.load's PytorchStreamReader and pickle's UnpicklingError, as the entry point's one line."""
    path = tmp_path / "last.ckpt"
    sharded.save_sharded(OneProcess(), checkpoint(1), path)
    whole = (path / name).read_bytes()
    (path / name).write_bytes(
        {"truncated": whole[: len(whole) // 2], "empty": b"", "binary": os.urandom(len(whole))}[damage]
    )
    error = refusal(capsys, lambda: main(lambda: read_checkpoint(path)))
    assert error.startswith(f"error: {path / name}: not readable (") and error.endswith(
        "give the folder as its fit saved it"
    )
