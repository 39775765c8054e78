"""`python -m <package> export` of any LightningModule: the class the checkpoint names (LightningCLI with
`subclass_mode_model`), its example input from the model or from a batch of its data, a batch axis that is free and
checked at other sizes, and a message that gives the real shapes. On the tiny modules of export_tasks.py, each fitted
for one epoch by LightningCLI as a project's `fit` would."""

import sys
from pathlib import Path

import lightning as L
import onnxruntime
import pytest
import torch
from export_tasks import QUIET, Regressor, Samples, SignalCNN, TwoHeads, fitted

from lightning_runs.tools import export

HERE = "export_tasks"  # where the class paths of the checkpoints point


@pytest.fixture(scope="module")
def regression(tmp_path_factory) -> Path:
    """A Regressor whose network is not the default: given by class path, with other init_args."""
    network = ["--model.network", f"{HERE}.MLP", "--model.network.hidden", "5"]
    return fitted(tmp_path_factory.mktemp("regression"), "Regressor", *network)


def refusal(capsys, args: list[str], model_class=Regressor) -> str:
    with pytest.raises(SystemExit) as exit_:
        export.main(model_class, args)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


def run_exported(path: Path, inputs: torch.Tensor):
    if path.suffix == ".onnx":
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        outputs = session.run(None, {"inputs": inputs.numpy()})
        return dict(zip([o.name for o in session.get_outputs()], map(torch.from_numpy, outputs), strict=True))
    loaded = torch.jit.load(path) if path.name.endswith(".torchscript.pt") else torch.export.load(path).module()
    with torch.no_grad():
        return loaded(inputs)


@pytest.mark.parametrize("format", ["onnx", "torchscript", "pt2"])
def test_a_regression_without_example_input_is_exported_from_a_batch_of_its_data(regression, format, capsys):
    output = f"model{export.SUFFIXES[format]}"
    path = export.main(L.LightningModule, ["--ckpt_path", str(regression), "--format", format, "--output", output])
    assert capsys.readouterr().out == (f"Wrote {path}: inputs (N, 3) as {HERE}.Samples gives them -> outputs (N,)\n")
    model = Regressor.load_from_checkpoint(regression, weights_only=True).eval()
    assert model.network.layers[0].out_features == 5, "its network rebuilt from its class path and init_args"
    for inputs in (torch.randn(1, 3), torch.randn(7, 3)):
        with torch.no_grad():
            expected = model(inputs)
        exported = run_exported(path, inputs)
        exported = exported["outputs"] if format == "onnx" else exported  # ONNX names it
        torch.testing.assert_close(exported, expected, atol=1e-5, rtol=1e-5)


def files() -> set[str]:
    return {str(path) for path in Path(".").rglob("*")}


@pytest.mark.parametrize("size_from", ["len", "shape"])
def test_a_cnn_reshaping_with_len_x_is_refused_in_one_line_and_one_with_x_shape_runs_at_any_batch(
    tmp_path, size_from, capsys
):
    """`x.view(len(x), ...)` makes the batch size a constant in torch.export: torch.onnx given the module wrote a file
    for batches of 2 alone, and a check at the example's batch of 2 passed it. `x.shape[0]` stays free."""
    ckpt = fitted(tmp_path, "SignalCNN", "--model.size_from", size_from, data=("--data.shape", "[40]"))
    args = ["--ckpt_path", str(ckpt), "--output", "cnn.onnx"]
    if size_from == "len":
        before = files()
        assert refusal(capsys, args) == (
            f"error: {HERE}.SignalCNN cannot be exported with a free batch size (UserError: Constraints violated"
            ' (batch)! For more information, run with TORCH_LOGS="+dynamic".)'
        )
        assert files() == before, "nothing written"
        return
    path = export.main(L.LightningModule, args)
    assert capsys.readouterr().out == f"Wrote {path}: inputs (N, 40) as {HERE}.Samples gives them -> outputs (N,)\n"
    model = SignalCNN.load_from_checkpoint(ckpt, weights_only=True).eval()
    for inputs in (torch.randn(1, 40), torch.randn(7, 40)):
        with torch.no_grad():
            torch.testing.assert_close(run_exported(path, inputs)["outputs"], model(inputs), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("format", ["onnx", "torchscript"])
def test_a_dict_of_outputs_keeps_its_keys_as_the_onnx_output_names(tmp_path, format, capsys):
    ckpt = fitted(tmp_path, "TwoHeads")
    path = export.main(L.LightningModule, ["--ckpt_path", str(ckpt), "--format", format])
    assert capsys.readouterr().out == (
        f"Wrote {path}: inputs (N, 3) as {HERE}.Samples gives them -> outputs: value (N,), logits (N, 2)\n"
    )
    model = TwoHeads.load_from_checkpoint(ckpt, weights_only=True).eval()
    inputs = torch.randn(5, 3)
    with torch.no_grad():
        expected = model(inputs)
    exported = run_exported(path, inputs)
    assert list(exported) == ["value", "logits"]
    torch.testing.assert_close(dict(exported), expected, atol=1e-5, rtol=1e-5)


def test_a_tuple_of_outputs_is_named_by_position(tmp_path, capsys):
    ckpt = fitted(tmp_path, "TwoHeads", "--model.as_dict", "false")
    path = export.main(L.LightningModule, ["--ckpt_path", str(ckpt)])
    assert capsys.readouterr().out.endswith("-> outputs: outputs_0 (N,), outputs_1 (N, 2)\n")
    assert list(run_exported(path, torch.randn(4, 3))) == ["outputs_0", "outputs_1"]


def test_a_file_that_fails_at_another_batch_size_is_refused_and_not_written(tmp_path, capsys):
    ckpt = fitted(tmp_path, "SizeAsNumber")
    before = files()
    error = refusal(capsys, ["--ckpt_path", str(ckpt), "--format", "torchscript", "--output", "model.torchscript.pt"])
    assert error == (
        f"error: {HERE}.SizeAsNumber cannot be exported with a free batch size: the torchscript file run at a batch"
        " of 1: RuntimeError: shape '[2, -1]' is invalid for input of size 3"
    )
    assert files() == before
    path = export.main(L.LightningModule, ["--ckpt_path", str(ckpt), "--format", "pt2", "--output", "model.pt2"])
    assert run_exported(path, torch.randn(6, 3)).shape == (6,), "torch.export kept the size free"


@pytest.mark.parametrize(
    ("class_path", "said"),
    [
        (
            "harmful.not_a_class",
            "refusing to load, its hyper_parameters name 'harmful.not_a_class', which is not a class",
        ),
        ("nowhere.Model", "its hyper_parameters name 'nowhere.Model', which is no LightningModule class here"),
        ("harmful.Plain", "its hyper_parameters name 'harmful.Plain', which is no LightningModule class here"),
    ],
)
def test_a_class_path_that_names_no_lightning_module_is_refused_in_one_line(
    regression, class_path, said, monkeypatch, capsys
):
    # A module whose import would leave a mark: a name that is not a class in it is refused before any import.
    Path("harmful.py").write_text(
        "from pathlib import Path\nPath('imported').touch()\nnot_a_class = print\nclass Plain:\n    pass\n"
    )
    monkeypatch.syspath_prepend(".")
    monkeypatch.delitem(sys.modules, "harmful", raising=False)
    checkpoint = torch.load(regression, weights_only=True)
    checkpoint["hyper_parameters"]["_class_path"] = class_path
    torch.save(checkpoint, "edited.ckpt")
    before = files()
    assert refusal(capsys, ["--ckpt_path", "edited.ckpt"]) == f"error: --ckpt_path edited.ckpt: {said}"
    if class_path == "harmful.Plain":  # a class in its source: imported, as the CLI imports a --model class path
        assert Path("imported").exists()
    else:
        assert "harmful" not in sys.modules and not Path("imported").exists(), "nothing imported"
    assert files() - {"imported"} == before, "nothing written"


def test_a_network_left_out_of_the_saved_hyperparameters_is_refused_saying_so(tmp_path, capsys):
    ckpt = fitted(tmp_path, "InjectedRegressor", "--model.network", f"{HERE}.MLP", "--model.network.hidden", "5")
    error = refusal(capsys, ["--ckpt_path", str(ckpt)])
    assert error.startswith(f"error: --ckpt_path {ckpt}: not a checkpoint of {HERE}.InjectedRegressor (")
    assert "size mismatch for network.layers.0.weight" in error and "save_hyperparameters (ignore=...)" in error


def test_a_checkpoint_of_a_cli_without_model_class_paths_uses_the_projects_class(tmp_path, capsys):
    """Saved by a plain Trainer: no `_class_path`, no DataModule class path. The class given is rebuilt; with no
    example_input_array and no data to take a batch from, export says what to add."""
    trainer = L.Trainer(**QUIET)
    trainer.fit(Regressor(), datamodule=Samples())
    trainer.save_checkpoint(tmp_path / "plain.ckpt")
    assert refusal(capsys, ["--ckpt_path", str(tmp_path / "plain.ckpt")]) == (
        f"error: {HERE}.Regressor has no example_input_array and the checkpoint names no DataModule to take a batch"
        " from: set the model's example_input_array in its __init__ to a batch of one sample's shape"
        " (python -m pydoc lightning_runs.contract.parts), export traces the model with it"
    )
    error = refusal(capsys, ["--ckpt_path", str(tmp_path / "plain.ckpt")], model_class=TwoHeads)
    assert error.startswith(f"error: --ckpt_path {tmp_path / 'plain.ckpt'}: not a checkpoint of {HERE}.TwoHeads (")
    assert error.endswith(
        "; the checkpoint names no class of its own: one that calls self.save_hyperparameters() does)"
    )
