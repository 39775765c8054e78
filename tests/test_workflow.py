"""One short run through the whole life of a model: fit, a crash, resume, test, predict on a file, export."""

import csv
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch

from helpers import run
from project.cli import MODEL
from project.cli import run as entry_point

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3", "--trainer.limit_val_batches=2"]
RUN = Path("runs/digits/version_0")


def test_fit_resume_test_predict_and_export(capsys):
    crash = ["--trainer.callbacks+=helpers.CrashAt", "--trainer.callbacks.step=4"]  # in the second epoch
    with pytest.raises(RuntimeError, match="crash at step 4"):
        run("fit", *SHORT, *crash)
    assert torch.load(RUN / "checkpoints/last.ckpt", weights_only=False)["global_step"] == 3  # the first epoch's end

    resumed = run("fit", *SHORT, "--ckpt_path=last")  # the same command, resumed into the same run folder
    assert resumed.trainer.global_step == 6 and sorted(p.name for p in RUN.parent.iterdir()) == ["version_0"]
    best = RUN / "checkpoints/best.ckpt"
    assert best.is_file()

    tested = run("test", "--ckpt_path", str(best))
    assert 0.0 <= tested.trainer.callback_metrics["test/loss"] < 10  # a number, from the best checkpoint

    samples = resumed.datamodule.splits["test"][0][:7]  # raw samples, as a user's file holds them
    np.save("mine.npy", samples.numpy())
    run("predict", "--ckpt_path", str(best), "--data.predict_path=mine.npy")
    with (RUN / "predictions.csv").open() as file:
        assert len(list(csv.DictReader(file))) == len(samples)

    onnx = entry_point(["export", "--ckpt_path", str(best), "--format", "onnx"])
    session = onnxruntime.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])
    exported = session.run(None, {session.get_inputs()[0].name: samples.numpy()})[0]
    model = MODEL.load_from_checkpoint(best, map_location="cpu").eval()
    with torch.no_grad():
        assert torch.allclose(torch.from_numpy(exported), model(samples), atol=1e-4)
    capsys.readouterr()
