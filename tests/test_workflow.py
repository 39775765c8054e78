"""One short run through the whole life of the model cli.py trains: fit, a crash, resume, test, predict, export.
It reads the run folder, the data and the outputs from the run itself, never from the example: switch `MODEL` (or
the DataModule) in cli.py to a module of another task and it still holds, for any model whose forward takes one
tensor and returns one."""

import csv
from pathlib import Path

import onnxruntime
import pytest
import torch

from project.cli import run as entry_point

from helpers import run

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3", "--trainer.limit_val_batches=2"]


def inputs(batch) -> torch.Tensor:
    """What a batch gives the model: the batch itself, or its first entry ((inputs, targets, ...))."""
    return batch[0] if isinstance(batch, list | tuple) else batch


def test_fit_resume_test_predict_and_export(capsys):
    crash = ["--trainer.callbacks+=helpers.CrashAt", "--trainer.callbacks.step=4"]  # in the second epoch
    with pytest.raises(RuntimeError, match="crash at step 4"):
        run("fit", *SHORT, *crash)
    (folder,) = Path("runs").glob("*/version_0")  # named for what it trains
    assert torch.load(folder / "checkpoints/last.ckpt", weights_only=False)["global_step"] == 3  # the first epoch

    resumed = run("fit", *SHORT, "--ckpt_path=last")  # the same command, resumed into the same run folder
    assert resumed.trainer.global_step == 6 and Path(resumed.trainer.logger.log_dir) == folder
    assert sorted(p.name for p in folder.parent.iterdir()) == ["version_0"]
    best = folder / "checkpoints/best.ckpt"

    tested = run("test", "--ckpt_path", str(best))  # the model and data rebuilt from the checkpoint alone
    scores = {k: v for k, v in tested.trainer.callback_metrics.items() if k.startswith("test")}
    assert scores and all(torch.isfinite(v).all() for v in scores.values()), scores

    predicting = run("predict", "--ckpt_path", str(best))
    predicted = sum(len(inputs(batch)) for batch in predicting.datamodule.predict_dataloader())
    with (folder / "predictions.csv").open() as file:
        assert len(list(csv.DictReader(file))) == predicted, "one row a sample"

    samples = inputs(next(iter(tested.datamodule.test_dataloader())))[:7]  # not the export example's batch size
    onnx = entry_point(["export", "--ckpt_path", str(best), "--format", "onnx"])
    session = onnxruntime.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])
    exported = session.run(None, {session.get_inputs()[0].name: samples.numpy()})[0]
    with torch.no_grad():
        assert torch.allclose(torch.from_numpy(exported), tested.model.eval()(samples), atol=1e-4)
    capsys.readouterr()
