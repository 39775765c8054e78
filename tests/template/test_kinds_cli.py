"""Seven kinds of LightningModule written as Lightning's docs write them (tests/template/kinds/: a GAN with manual
optimization, a segmentation net, a VAE, a contrastive model, a ReduceLROnPlateau regression, dict batches, two inputs),
each through every command of `python -m project` with no change to cli.py or the library, only a config declaring
what the run watches: fit, killed with -9 and resumed with `--ckpt_path last` to the uninterrupted run's state bit for
bit, validate and test from the checkpoint alone (or one line where the module has no such step), predict, and export
to ONNX at any batch size (or one line saying why not)."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from project.cli import run

from support import ROOT, assert_same_checkpoint, forked, load

BATCHES = 4  # training batches an epoch; the kill comes as the second epoch's first batch begins
KINDS = {  # module, DataModule, what best.ckpt watches (None: the newest), whether it validates and tests
    "gan": ("gan.GAN", "gan.MixtureData", None, False, False),
    "segmentation": ("segmentation.Segmenter", "segmentation.ShapesData", ("val_iou", "max"), True, True),
    "vae": ("vae.VAE", "vae.BlobsData", ("val_loss", "min"), True, False),
    "contrastive": ("contrastive.Contrastive", "contrastive.ClustersData", ("val_loss", "min"), True, False),
    "plateau": ("plateau.PlateauRegressor", "plateau.RegressionData", ("val_loss", "min"), True, True),
    "dict_batch": ("dict_batch.DictBatchClassifier", "dict_batch.DictData", ("val_acc", "max"), True, True),
    "two_inputs": ("two_inputs.TwoInputModel", "two_inputs.TokensData", ("val_acc", "max"), True, True),
}
DAILY = ()  # each kind runs every command in CI's slow tests; a GAN's fit, validate and test daily in test_figures.py


def config(kind: str) -> str:
    """The config a user writes for the kind: the classes, and what the run watches."""
    model, data, watched, validates, _ = KINDS[kind]
    lines = [f"# python -m project fit --config {kind}.yaml", f"model: kinds.{model}", f"data: kinds.{data}"]
    lines += ["trainer:", "  max_epochs: 3", f"  limit_train_batches: {BATCHES}"]
    if watched is None:
        lines += ["best_checkpoint:", "  monitor: null  # nothing validated: best.ckpt is the newest"]
        lines += ["early_stopping: null"]
    else:
        lines += ["best_checkpoint:", f"  monitor: {watched[0]}", f"  mode: {watched[1]}"]
        lines += ["early_stopping:", "  monitor: val_loss"] if validates else []
    return "\n".join(lines) + "\n"


def project(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(ROOT / "tests/template"), str(ROOT / "lightning-runs/tests"), str(ROOT)])
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}
    quiet = [] if args[0] == "export" else ["--quiet"]
    command = [sys.executable, "-m", "project", *args, *quiet]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("kind", [pytest.param(k, marks=[] if k in DAILY else [pytest.mark.slow]) for k in KINDS])
def test_each_kind_runs_every_command_with_a_config_of_its_own(kind, tmp_path, monkeypatch):
    _, _, _, validates, tests = KINDS[kind]
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    for folder in (whole, stopped):
        folder.mkdir()
        (folder / f"{kind}.yaml").write_text(config(kind))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # in this process, the one thread the processes have
    try:
        monkeypatch.chdir(whole)  # the uninterrupted run, in this process
        run(["fit", f"--config={kind}.yaml", "--quiet"])
        # Killed with -9 as the second epoch's first batch begins: a process of its own, forked where it can be.
        monkeypatch.chdir(stopped)
        killed = [f"--config={kind}.yaml", "--trainer.callbacks+=lightning_runs.testing.SignalAt"]
        killed += ["--trainer.callbacks.signum=9", f"--trainer.callbacks.batch={BATCHES}"]
        status = forked(
            lambda: run(["fit", *killed, "--quiet"]), lambda: project("fit", *killed, cwd=stopped).returncode
        )
        assert status == -9
    finally:
        torch.set_num_threads(threads)
    resumed = project("fit", f"--config={kind}.yaml", "--ckpt_path=last", cwd=stopped)
    assert resumed.returncode == 0 and f"fit resumes runs/{kind}/version_0" in resumed.stdout, resumed.stderr[-3000:]
    run_folder = Path(f"runs/{kind}/version_0/checkpoints")
    assert_same_checkpoint(load(whole / run_folder / "last.ckpt"), load(stopped / run_folder / "last.ckpt"))

    # The evaluations that work run in this process too (a process each cost ~5 s of imports, most of this test); each
    # refusal runs as a process of its own, its whole stderr the one line.
    monkeypatch.chdir(stopped)
    for subcommand, has_it in (("validate", validates), ("test", tests)):
        if has_it:
            run([subcommand, "--ckpt_path=best", f"--name={kind}", "--quiet"])  # the checkpoint alone
        else:  # one line saying so, exit 2
            done = project(subcommand, "--ckpt_path=best", f"--name={kind}", cwd=stopped)
            assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-3000:]
    run(["predict", f"--ckpt_path={run_folder / 'best.ckpt'}", "--quiet"])
    with (stopped / run_folder.parent / "predictions.csv").open() as file:
        assert len(list(csv.DictReader(file))) > 0
    if kind == "vae":  # its forward samples: refused naming that cause, nothing written
        exported = project("export", f"--ckpt_path={run_folder / 'best.ckpt'}", "--format=onnx", cwd=stopped)
        assert exported.returncode == 2 and "it samples" in exported.stderr and len(exported.stderr.splitlines()) == 1
        assert not (stopped / run_folder / "best.onnx").exists()
    else:
        run(["export", f"--ckpt_path={run_folder / 'best.ckpt'}", "--format=onnx"])
        assert (stopped / run_folder / "best.onnx").is_file()
    assert not torch.cuda.is_initialized()
