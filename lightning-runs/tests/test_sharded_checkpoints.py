"""Sharded checkpoints (checkpoints/sharded.py): a folder per checkpoint that is whole or absent. A save killed at any
moment before its swap leaves the previous folder in place and readable. One process here (torch.distributed not
started); the 2-process fits, kills and resumes are in the template's tests/template/test_fsdp.py."""

import os
import signal

import pytest
import torch

from lightning_runs.checkpoints import sharded
from lightning_runs.checkpoints.loading import read_checkpoint
from lightning_runs.errors import UsageError


class OneProcess:
    """What save_sharded asks of a strategy, for a world of one."""

    global_rank = 0

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


def test_a_sharded_save_reads_back_as_a_single_file_checkpoint_reads(tmp_path):
    path = tmp_path / "last.ckpt"
    sharded.save_sharded(OneProcess(), checkpoint(3), path)
    assert sharded.is_sharded(path) and not sharded.partial_folder(path).exists()
    read = sharded.consolidated(path)
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
    assert sharded.consolidated(path)["global_step"] == 2
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
    assert sharded.partial_folder(path).is_dir(), "the killed save had written its shards"
    assert read_checkpoint(path)["global_step"] == 1, "the previous checkpoint, whole"
    torch.testing.assert_close(sharded.consolidated(path)["state_dict"]["net.weight"], torch.full((3, 2), 1.0))
    sharded.save_sharded(OneProcess(), checkpoint(3), path)  # the next save clears what the killed one left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]
    assert read_checkpoint(path)["global_step"] == 3


def test_a_folder_that_is_not_a_checkpoint_is_refused_in_one_line(tmp_path):
    (tmp_path / "folder.ckpt").mkdir()
    (tmp_path / "folder.ckpt" / "notes.txt").write_text("not shards")
    with pytest.raises(UsageError, match=r"folder\.ckpt: a folder that is not a sharded checkpoint"):
        read_checkpoint(tmp_path / "folder.ckpt")
