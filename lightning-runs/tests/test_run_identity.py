"""A run is the folder its checkpoint lies in: a fit from a run's checkpoint continues that folder, and an evaluation of
it writes there, whatever its config.yaml's logger settings say (a run copied, moved or given another name keeps its
files together). What names a run or its checkpoint and cannot is one line: an empty name, a last.ckpt that is no
file, a new run's weights (--init_from) over another checkpoint's training state. Names: see test_run_names.py."""

import os
import shutil
from pathlib import Path

import pytest
import torch
from lightning.pytorch.callbacks import Callback
from tiny_runs import assert_kept, refusal, run, snapshot

from lightning_runs.checkpoints import BestCheckpoint

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]


def folder(cli) -> Path:
    return Path(cli.trainer.logger.log_dir)


def test_a_fit_from_a_checkpoint_of_another_name_continues_that_run_in_its_folder(stopped, capsys):
    shutil.copytree(stopped / "tiny/version_0", "runs/rp/version_0")  # a fit of SHORT stopped at step 2, renamed
    resumed = run("fit", *SHORT, "--ckpt_path=runs/rp/version_0/checkpoints/last.ckpt")  # no --name
    assert "fit resumes runs/rp/version_0 from last.ckpt (step 2)" in capsys.readouterr().out
    assert folder(resumed) == Path("runs/rp/version_0") and resumed.trainer.global_step == 4
    assert os.listdir("runs") == ["rp"], "nothing of the default name"


class BestAtStart(Callback):
    def on_train_start(self, trainer, pl_module) -> None:
        best = next(c for c in trainer.checkpoint_callbacks if isinstance(c, BestCheckpoint))
        self.kept = best.best_model_path, best.best_model_score


def test_a_moved_run_resumes_with_its_best_checkpoints_score(stopped):
    """Lightning restores a ModelCheckpoint's best score only into the folder it saved it in: a moved run's next epoch
    would replace its best.ckpt whatever it scored."""
    shutil.copytree(stopped / "tiny/version_0", "runs/moved/version_0")
    saved = torch.load("runs/moved/version_0/checkpoints/last.ckpt", weights_only=True)["callbacks"]
    score = next(state for key, state in saved.items() if key.startswith("BestCheckpoint"))["best_model_score"]
    best = BestAtStart()
    run("fit", *SHORT, "--ckpt_path=runs/moved/version_0/checkpoints/last.ckpt", callbacks=[best])
    assert best.kept == ("runs/moved/version_0/checkpoints/best.ckpt", score)


@pytest.mark.parametrize("how", ["copied", "moved"])
def test_a_copied_or_moved_run_is_evaluated_in_its_own_folder(finished, how):
    if how == "copied":  # its config.yaml still names runs/tiny/version_0, which holds the original
        shutil.copytree(finished, "runs")
    shutil.copytree(finished / "tiny/version_0", "runs/other/version_3")
    before = snapshot()
    tested = run("test", "--ckpt_path=runs/other/version_3/checkpoints/best.ckpt")
    by_name = run("test", "--name=other", "--ckpt_path=best")
    assert folder(tested) == folder(by_name) == Path("runs/other/version_3")
    after = snapshot()
    changed = {path for path, digest in after.items() if before.get(path) != digest} | (before.keys() - after.keys())
    assert {Path(p).parent for p in changed} == {Path("runs/other/version_3")}, changed  # its configs, events, summary
    assert sorted(os.listdir("runs")) == (["other", "tiny"] if how == "copied" else ["other"]), "no ghost run"


def test_an_evaluation_of_a_run_whose_config_is_an_empty_mapping_writes_into_that_run(finished):
    shutil.copytree(finished, "runs")
    Path("runs/tiny/version_0/config.yaml").write_text("{}\n")
    tested = run("test", "--ckpt_path=runs/tiny/version_0/checkpoints/best.ckpt")
    assert folder(tested) == Path("runs/tiny/version_0") and os.listdir("runs/tiny") == ["version_0"]


def test_an_empty_name_is_refused(capsys):
    assert "--name '': must be one folder name" in refusal(capsys, lambda: run("fit", *SHORT, "--name="))
    assert not Path("runs").exists()


@pytest.mark.parametrize("kind", ["folder", "fifo"])
@pytest.mark.parametrize("subcommand", ["fit", "test"])
def test_a_last_checkpoint_that_is_no_file_is_one_line_naming_it(stopped, subcommand, kind, capsys):
    shutil.copytree(stopped, "runs")
    last = Path("runs/tiny/version_0/checkpoints/last.ckpt")
    last.unlink()
    last.mkdir() if kind == "folder" else os.mkfifo(last)
    before = snapshot()
    error = refusal(capsys, lambda: run(subcommand, *SHORT, "--ckpt_path=last"))
    assert error.startswith(f"error: {last}: ") and "give a checkpoint file" in error, error
    assert not assert_kept(before, snapshot()) and os.listdir("runs/tiny") == ["version_0"]


def test_init_from_with_a_checkpoint_outside_any_run_is_refused(finished, stopped, capsys):
    shutil.copytree(finished, "runs")
    shutil.copy(stopped / "tiny/version_0/checkpoints/last.ckpt", "loose.ckpt")  # another run's step-2 state
    given = ["--name=c", "--init_from=runs/tiny/version_0/checkpoints/best.ckpt", "--ckpt_path=loose.ckpt"]
    error = refusal(capsys, lambda: run("fit", *SHORT, *given))
    assert "--init_from" in error and "--ckpt_path loose.ckpt" in error, error
    assert not Path("runs/c").exists()
