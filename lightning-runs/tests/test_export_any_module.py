"""`python -m <package> export` of any LightningModule: the class the checkpoint names (LightningCLI with
`subclass_mode_model`), traced from the module's own `example_input_array` taken whole (a tuple: several positional
inputs; a dict: keyword inputs), its batch axis free and checked at other sizes, and a cause named where it cannot be
(a forward that samples, a line that makes the batch size a constant). On the tiny modules of export_tasks.py, each
fitted for one epoch by LightningCLI as a project's `fit` would."""

import sys
from pathlib import Path

import onnxruntime
import pytest
import torch
from export_tasks import (
    QUIET,
    KeywordInputs,
    Regressor,
    Samples,
    SignalCNN,
    TwoHeads,
    TwoInputs,
    exports,
    fitted,
    refused,
)
from tiny_runs import slow_repeats

from lightning_runs.tools import export

HERE = "export_tasks"  # where the class paths of the checkpoints point


def run_exported(path: Path, *inputs: torch.Tensor, **named: torch.Tensor) -> list[torch.Tensor]:
    """The exported file's outputs, loaded back by what serves that format."""
    if path.suffix == ".onnx":
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        feed = {f"input_{i}": x.numpy() for i, x in enumerate(inputs)} | {k: v.numpy() for k, v in named.items()}
        return [torch.from_numpy(array) for array in session.run(None, feed)]
    loaded = torch.jit.load(path) if path.name.endswith(".torchscript.pt") else torch.export.load(path).module()
    with torch.no_grad():
        output = loaded(*inputs, **named)
    return (
        list(output.values()) if isinstance(output, dict) else list(output) if isinstance(output, tuple) else [output]
    )


def assert_runs_as_the_module(path: Path, model, *inputs: torch.Tensor, **named: torch.Tensor) -> None:
    with torch.no_grad():
        expected = model(*inputs, **named)
    expected = (
        list(expected.values())
        if isinstance(expected, dict)
        else list(expected)
        if isinstance(expected, tuple)
        else [expected]
    )
    for got, want in zip(run_exported(path, *inputs, **named), expected, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.fixture(scope="module")
def regression(tmp_path_factory) -> Path:
    """A Regressor whose network is not the default: given by class path, with other init_args."""
    network = ["--model.network", f"{HERE}.MLP", "--model.network.hidden", "5"]
    return fitted(tmp_path_factory.mktemp("regression"), "Regressor", *network)


@pytest.fixture(scope="module")
def fitted_once(tmp_path_factory):
    """`fitted`, once a module for each model and its options: the cases of several formats export one checkpoint
    (each format's file beside it has a suffix of its own)."""
    checkpoints: dict[tuple[str, ...], Path] = {}

    def fit(*model_and_args: str) -> Path:
        if model_and_args not in checkpoints:
            home = tmp_path_factory.mktemp(model_and_args[0])
            with pytest.MonkeyPatch.context() as patch:
                patch.chdir(home)
                checkpoints[model_and_args] = fitted(home, *model_and_args)
        return checkpoints[model_and_args]

    return fit


# The module is rebuilt before any format is chosen: onnx every day; the other formats' exports of a module's plain
# tensor input run every day in test_a_tuple_example_is_two_positional_inputs_in_every_format.
TUPLE_INPUTS = "lightning-runs/tests/test_export_any_module.py::test_a_tuple_example_is_two_positional_inputs_in_every"
FORMATS = ["onnx", "torchscript", "pt2"]
REBUILT = {"torchscript": f"{TUPLE_INPUTS}_format[torchscript]", "pt2": f"{TUPLE_INPUTS}_format[pt2]"}


@pytest.mark.parametrize("format", slow_repeats(FORMATS, FORMATS, REBUILT))
def test_a_module_rebuilt_from_its_class_path_exports_to_each_format_and_runs_at_other_batch_sizes(
    regression, format, capsys
):
    path = exports("--ckpt_path", str(regression), "--format", format, "--output", f"model{export.SUFFIXES[format]}")
    assert capsys.readouterr().out == (
        f"export: {regression} (epoch 1, step 4), outside any run\n"
        f"Wrote {path}: per sample, inputs input_0 (3,) float32 -> outputs output (); any batch size\n"
    )
    model = Regressor.load_from_checkpoint(regression, weights_only=True).eval()
    assert model.network.layers[0].out_features == 5, "its network rebuilt from its class path and init_args"
    for size in (1, 7, 300):
        assert_runs_as_the_module(path, model, torch.randn(size, 3))


@pytest.mark.parametrize("format", ["onnx", "torchscript", "pt2"])
def test_a_tuple_example_is_two_positional_inputs_in_every_format(fitted_once, format, capsys):
    """export once cut a tuple example_input_array to its first element: `forward() missing 1 required positional
    argument`."""
    ckpt = fitted_once("TwoInputs")
    path = exports("--ckpt_path", str(ckpt), "--format", format)
    assert "inputs input_0 (3,) float32, input_1 (2,) float32 -> outputs output ()" in capsys.readouterr().out
    model = TwoInputs.load_from_checkpoint(ckpt, weights_only=True).eval()
    for size in (1, 9):
        assert_runs_as_the_module(path, model, torch.randn(size, 3), torch.randn(size, 2))


@pytest.mark.parametrize("format", ["onnx", "pt2"])  # each exporter is handed keyword inputs its own way
def test_a_dict_example_is_keyword_inputs_named_as_its_keys(fitted_once, format, capsys):
    ckpt = fitted_once("KeywordInputs")
    path = exports("--ckpt_path", str(ckpt), "--format", format)
    assert "inputs x (3,) float32, scale (1,) float32 -> outputs output ()" in capsys.readouterr().out
    model = KeywordInputs.load_from_checkpoint(ckpt, weights_only=True).eval()
    assert_runs_as_the_module(path, model, x=torch.randn(5, 3), scale=torch.rand(5, 1))


def test_a_forward_that_samples_is_refused_naming_how_far_apart_two_calls_were(tmp_path, capsys):
    """A VAE sampling in forward: once blamed on "a free batch size"; the cause is measured, not the last check."""
    ckpt = fitted(tmp_path, "VAE")
    error = refused(capsys, "--ckpt_path", str(ckpt))
    assert error.startswith("error: VAE's forward gave outputs ") and error.endswith(
        " apart on the same inputs: it samples, and an export of it could not be checked; make forward deterministic"
        " in eval mode (sample only while training)"
    )
    assert float(error.split("outputs ")[1].split(" apart")[0]) > 0


@pytest.mark.parametrize("size_from", ["len", "shape"])
def test_a_forward_reshaping_with_len_x_is_refused_naming_its_line_and_one_with_x_shape_runs_at_any_batch(
    tmp_path, size_from, capsys
):
    """`x.view(len(x), ...)` makes the batch size a constant in torch.export (Python's len returns an int): torch.onnx
    given the module wrote a file for batches of 2 alone, and a check at the example's batch of 2 passed it."""
    ckpt = fitted(tmp_path, "SignalCNN", "--model.size_from", size_from, data=("--data.shape", "[40]"))
    args = ["--ckpt_path", str(ckpt), "--output", "cnn.onnx"]
    if size_from == "len":
        line = next(i for i, text in enumerate(Path(sys.modules[HERE].__file__).read_text().splitlines(), 1)
                    if "n = len(x) if" in text)  # fmt: skip
        assert refused(capsys, *args) == (
            "error: SignalCNN cannot be exported with a free batch size: `n = len(x) if self.hparams.size_from =="
            f' "len" else x.shape[0]` (export_tasks.py:{line}) makes it a constant (UserError: Constraints violated'
            ' (batch)! For more information, run with TORCH_LOGS="+dynamic".); export at a fixed batch size with'
            " --batch_size N"
        )
        fixed = exports(*args, "--batch_size", "5")  # the way out the line names
        assert "; a batch of 5 only" in capsys.readouterr().out
        model = SignalCNN.load_from_checkpoint(ckpt, weights_only=True).eval()
        assert_runs_as_the_module(fixed, model, torch.randn(5, 40))
        with pytest.raises(Exception, match="5"):  # that batch alone: another is refused by the runtime
            run_exported(fixed, torch.randn(3, 40))
        return
    path = exports(*args)
    model = SignalCNN.load_from_checkpoint(ckpt, weights_only=True).eval()
    for size in (1, 7):
        assert_runs_as_the_module(path, model, torch.randn(size, 40))


@pytest.mark.parametrize("format", ["onnx", "torchscript", "pt2"])  # each names (or keeps) a dict's keys its own way
def test_a_dict_of_outputs_keeps_its_keys_as_the_output_names(fitted_once, format, capsys):
    ckpt = fitted_once("TwoHeads")
    path = exports("--ckpt_path", str(ckpt), "--format", format)
    assert "-> outputs value (), logits (2,); any batch size" in capsys.readouterr().out
    model = TwoHeads.load_from_checkpoint(ckpt, weights_only=True).eval()
    assert_runs_as_the_module(path, model, torch.randn(5, 3))
    if format == "onnx":
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        assert [output.name for output in session.get_outputs()] == ["value", "logits"]


def test_a_tuple_of_outputs_is_named_by_position(tmp_path, capsys):
    ckpt = fitted(tmp_path, "TwoHeads", "--model.as_dict", "false")
    path = exports("--ckpt_path", str(ckpt))
    assert "-> outputs output_0 (), output_1 (2,); any batch size" in capsys.readouterr().out
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [output.name for output in session.get_outputs()] == ["output_0", "output_1"]


def test_a_file_that_fails_at_another_batch_size_is_refused_and_not_written(tmp_path, capsys):
    ckpt = fitted(tmp_path, "SizeAsNumber")
    error = refused(capsys, "--ckpt_path", str(ckpt), "--format", "torchscript", "--output", "model.torchscript.pt")
    assert error == (
        "error: SizeAsNumber's torchscript file, run at a batch of 1: RuntimeError: shape '[2, -1]' is invalid for"
        " input of size 3; export at a fixed batch size with --batch_size N"
    )
    path = exports("--ckpt_path", str(ckpt), "--format", "pt2", "--output", "model.pt2")
    assert run_exported(path, torch.randn(6, 3))[0].shape == (6,), "torch.export kept the size free"


def test_a_module_without_example_input_array_is_one_line(tmp_path, capsys):
    """export traces what the module declares; it never takes a batch of the data in its place."""
    ckpt = fitted(tmp_path, "NoExample")
    assert refused(capsys, "--ckpt_path", str(ckpt)) == (
        "error: NoExample has no example_input_array: set it in __init__ to a batch of inputs (a tensor, or a tuple of"
        " tensors for several), which export traces and checks the model with"
    )


@pytest.mark.parametrize(
    ("class_path", "said"),
    [
        ("nowhere.Model", "--model nowhere.Model: cannot be imported here (No module named 'nowhere')"),
        ("pathlib.Path", "--model pathlib.Path: cannot be imported here (Importing 'pathlib.Path' is not allowed"),
    ],
)
def test_a_class_path_that_names_no_lightning_module_is_refused_in_one_line(regression, class_path, said, capsys):
    checkpoint = torch.load(regression, weights_only=True)
    checkpoint["hyper_parameters"]["_class_path"] = class_path
    torch.save(checkpoint, "edited.ckpt")
    assert refused(capsys, "--ckpt_path", "edited.ckpt").startswith(f"error: {said}")


def test_a_network_left_out_of_the_saved_hyperparameters_is_refused_saying_so_and_built_as_typed(tmp_path, capsys):
    """A loose checkpoint (no run config) holds only what the module saved: the options typed with export build the
    rest, as they would for predict."""
    network = ["--model.network", f"{HERE}.MLP", "--model.network.hidden", "5"]
    ckpt = fitted(tmp_path, "InjectedRegressor", *network)
    error = refused(capsys, "--ckpt_path", str(ckpt))
    assert error.startswith(f"error: {ckpt}: its weights do not fit InjectedRegressor as built (")
    assert "size mismatch for network.layers.0.weight" in error
    # pt2, the cheapest format to write: what is tested is the module built, not a format (the tests above).
    typed = exports("--ckpt_path", str(ckpt), *network, "--format", "pt2", "--output", str(tmp_path / "typed.pt2"))
    assert typed.is_file()


def test_a_checkpoint_that_names_no_class_is_one_line(tmp_path, capsys):
    """Saved by a plain Trainer outside a run: no `_class_path` and no run config to name the module's class."""
    import lightning as L

    trainer = L.Trainer(**QUIET)
    trainer.fit(Regressor(), datamodule=Samples())
    trainer.save_checkpoint(tmp_path / "plain.ckpt")
    assert refused(capsys, "--ckpt_path", str(tmp_path / "plain.ckpt")) == (
        f"error: {tmp_path / 'plain.ckpt'}: names no LightningModule class (LightningCLI records it, and a run's"
        " config.yaml); give --model <class>, or export a checkpoint a run of this project saved"
    )
