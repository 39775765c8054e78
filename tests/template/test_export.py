"""`python -m project export`: ONNX, TorchScript and torch.export files taking raw pixels, as checkpoints do."""

import onnxruntime
import pytest
import torch

from lightning_runs.tools import export

from project.cli import cli_main
from project.model import DigitsClassifier

from support import run, working_directory

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A briefly trained checkpoint and the raw test-split digits of its run."""
    home = tmp_path_factory.mktemp("export")
    with working_directory(home):
        fit = run("fit", "--trainer.max_epochs=2", "--trainer.limit_train_batches=10")
    images, labels = fit.datamodule.splits["test"]  # (180, 8, 8) raw pixels in 0-16
    return home / "runs/digits/version_0/checkpoints/best.ckpt", images, labels


def run_exported(path, images: torch.Tensor) -> torch.Tensor:
    if path.suffix == ".onnx":
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        (outputs,) = session.run(None, {session.get_inputs()[0].name: images.numpy()})  # one input, one output
        return torch.from_numpy(outputs)
    model = torch.jit.load(str(path)) if path.name.endswith(".torchscript.pt") else torch.export.load(path).module()
    with torch.no_grad():
        return model(images)


@pytest.mark.parametrize("format", ["onnx", "torchscript", "pt2"])
def test_the_exported_model_takes_raw_pixels_and_matches_the_checkpoint_on_the_test_split(trained, format):
    ckpt_path, images, labels = trained
    path = export.main(cli_main, ["--ckpt_path", str(ckpt_path), "--format", format])
    assert path.parent == ckpt_path.parent and path.is_file()

    eager = DigitsClassifier.load_from_checkpoint(ckpt_path, map_location="cpu").eval()
    assert (eager.input_mean > 1).all() and (eager.input_std > 1).all(), "normalization is not the identity"
    with torch.no_grad():
        expected = eager(images)
    exported = run_exported(path, images)
    assert (exported - expected).abs().max().item() <= 1e-4
    assert torch.equal(exported.argmax(dim=1), expected.argmax(dim=1))
    assert (expected.argmax(dim=1) == labels).float().mean() > 0.5, "a trained model, not noise"
    # Any batch size: the batch dimension is free.
    for batch in (images[:1], images[:7]):
        torch.testing.assert_close(run_exported(path, batch), expected[: len(batch)], atol=1e-4, rtol=0)


def test_an_output_path_can_be_given(trained, tmp_path):
    ckpt_path, images, _ = trained
    path = export.main(cli_main, ["--ckpt_path", str(ckpt_path), "--output", str(tmp_path / "digits.onnx")])
    assert path == tmp_path / "digits.onnx" and run_exported(path, images[:3]).shape == (3, 10)
