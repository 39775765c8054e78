"""configs/fsdp.yaml: the example sharded with FSDP (torch's fully_shard) over 2 CPU processes (gloo), as a model
larger than one device would be on GPUs. Every promise of a DDP run holds, with checkpoints of either form (one file
gathered on rank zero, or with save_distributed_checkpoint a folder of one shard per process): a kill -9 or a
SIGTERM resumes bit for bit with `--ckpt_path last`, and its checkpoints test, predict and export from the checkpoint
alone, in one process."""

import json
import signal
from pathlib import Path

import pytest

from lightning_runs.checkpoints.sharded import is_sharded
from lightning_runs.tools import export

from project.cli import cli_main

from support import (
    DEFAULT,
    QUIET,
    ROOT,
    assert_same_checkpoint,
    load,
    run,
    run_subprocess,
    start,
    steps_per_epoch,
    wait_for,
    working_directory,
)

FSDP = ["--config", DEFAULT, "--config", str(ROOT / "configs/fsdp.yaml"), *QUIET]
ON_CPU = ["--trainer.accelerator=cpu", "--trainer.devices=2", "--trainer.precision=32", "--trainer.max_epochs=3"]
CHECKPOINTS = Path("runs/digits/version_0/checkpoints")
FORMS = {"one file": [], "sharded": ["--trainer.strategy.init_args.save_distributed_checkpoint=true"]}

pytestmark = pytest.mark.slow


def fit(*args: str, cwd: Path | None = None) -> None:
    done = run_subprocess("fit", *FSDP, *ON_CPU, *args, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module", params=list(FORMS))
def form(request) -> list[str]:
    """The options of one checkpoint form; each test of a fit runs once with each."""
    return FORMS[request.param]


@pytest.fixture(scope="module")
def reference(form, tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("fsdp")
    fit(*form, cwd=home)
    return home / CHECKPOINTS


def test_a_sharded_fit_killed_with_kill_9_resumes_bit_for_bit(form, reference, tmp_path):
    with working_directory(tmp_path):
        process = start("fit", *FSDP, *ON_CPU, *form)
        wait_for(lambda: (CHECKPOINTS / "last.ckpt").exists() or process.poll() is not None, what="a checkpoint")
        process.kill()  # rank zero; its rank 1 sees the closed connection and exits
        process.wait()
        assert process.returncode == -signal.SIGKILL, "the fit ended before it could be killed"
        assert 0 < load(CHECKPOINTS / "last.ckpt")["global_step"] < 3 * steps_per_epoch(world_size=2)
        fit("--ckpt_path=last", *form, cwd=tmp_path)
        assert_same_checkpoint(load(reference / "last.ckpt"), load(CHECKPOINTS / "last.ckpt"))
        assert sorted(p.name for p in CHECKPOINTS.iterdir()) == ["best.ckpt", "last.ckpt"], "nothing half-written"


def test_a_sharded_fit_stopped_by_sigterm_mid_epoch_resumes_bit_for_bit(form, reference, tmp_path):
    stop = ["--trainer.callbacks+=support.SignalAt", f"--trainer.callbacks.step={steps_per_epoch(world_size=2) + 3}"]
    stopped = run_subprocess("fit", *FSDP, *ON_CPU, *form, *stop, cwd=tmp_path)
    assert stopped.returncode == 143, stopped.stderr[-3000:]
    assert "stopped by SIGTERM at step" in stopped.stderr
    fit("--ckpt_path=runs/digits/version_0/checkpoints/last.ckpt", *form, cwd=tmp_path)
    assert_same_checkpoint(load(reference / "last.ckpt"), load(tmp_path / CHECKPOINTS / "last.ckpt"))


def test_its_checkpoint_tests_predicts_and_exports_from_the_checkpoint_alone(form, reference, capsys):
    assert is_sharded(reference / "best.ckpt") == bool(form), "a folder exactly where sharded checkpoints were asked"
    with working_directory(reference.parents[3]):
        tested = run("test", "--ckpt_path", str(reference / "best.ckpt"))  # one process, no FSDP
        assert tested.trainer.callback_metrics["test/acc"] > 0.5, "a trained model: the full weights were saved"
        run("predict", "--ckpt_path", str(reference / "best.ckpt"))
        assert len((reference.parent / "predictions.csv").read_text().splitlines()) == 1 + 180
        assert export.main(cli_main, ["--ckpt_path", str(reference / "best.ckpt")]).is_file()
        runs = run_subprocess("runs", cwd=reference.parents[3]).stdout
        assert "runs/digits/version_0  completed  3" in runs, runs
        summary = json.loads((reference.parent / "summary.json").read_text())
        assert summary["best_checkpoint"]["path"] == "checkpoints/best.ckpt"
        assert summary["evaluations"][0]["checkpoint"] == "checkpoints/best.ckpt"


def test_a_folder_that_is_not_a_checkpoint_is_refused_in_one_line(tmp_path):
    (tmp_path / "notes.ckpt").mkdir()
    (tmp_path / "notes.ckpt" / "notes.txt").write_text("no shards here")
    refused = run_subprocess("test", "--config", DEFAULT, *QUIET, "--ckpt_path", "notes.ckpt", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert refused.stderr.strip().splitlines()[-1].startswith("error: notes.ckpt: a folder that is not a whole sharded")
    assert not (tmp_path / "runs").exists(), "no run folder where nothing ran"
