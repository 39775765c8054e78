"""`python -m <package> export --ckpt_path <file> --format onnx|torchscript|pt2`: the trained model for serving.

The exported model is the LightningModule's own `forward`, normalization included, so raw samples of the shape the
model was trained on go straight in and its outputs come out, for any batch size N. The shape is the model's
`example_input_array` (docs/contract.md). The checkpoint is read as the CLI
reads one (refused in one line if it is not safe or not whole), the output is written atomically, and the input
is never overwritten.
"""

import io
from pathlib import Path
from typing import Literal

import torch
from torch.export import Dim

from lightning_runs import errors
from lightning_runs.atomic import write_atomically
from lightning_runs.checkpoints import read_checkpoint
from lightning_runs.contract import example_input
from lightning_runs.errors import UsageError
from lightning_runs.tools import function_cli

SUFFIXES = {"onnx": ".onnx", "torchscript": ".torchscript.pt", "pt2": ".pt2"}
BATCH = ({0: Dim("batch", min=1)},)  # the first dimension of the input stays free


def export(
    model_class: type,
    ckpt_path: Path,
    format: Literal["onnx", "torchscript", "pt2"] = "onnx",
    output: Path | None = None,
) -> Path:
    """Write the checkpoint's model in `format` and return where.

    Args:
        model_class: the project's LightningModule, as its CLI builds it
        ckpt_path: a checkpoint written by `python -m <package> fit`, e.g. runs/<name>/version_0/checkpoints/best.ckpt
        format: onnx (onnxruntime and most serving stacks), torchscript (torch.jit.load, C++ libtorch; deprecated
            in PyTorch, still loadable) or pt2 (torch.export.load, the format PyTorch recommends now)
        output: the file to write (replaced if it exists, never the checkpoint); by default beside the
            checkpoint, e.g. best.onnx
    """
    ckpt_path, output = Path(ckpt_path), Path(output or Path(ckpt_path).with_suffix(SUFFIXES[format]))
    if output.resolve() == ckpt_path.resolve() or (output.exists() and output.samefile(ckpt_path)):
        raise UsageError(f"--output {output}: that is the checkpoint itself; give another file")
    if output.is_dir() or not output.parent.is_dir():
        where = "a folder" if output.is_dir() else f"no folder {output.parent} to write it in"
        raise UsageError(f"--output {output}: {where}; give a file name, such as {output / 'model'}{SUFFIXES[format]}")
    if output.suffix == ".ckpt" or (output.exists() and not output.name.endswith(SUFFIXES[format])):
        raise UsageError(  # an export replaces only an earlier export of its format, never a run's checkpoint
            f"--output {output}: an existing file that is not a {format} export, or a checkpoint; give a new file"
            f" or one ending in {SUFFIXES[format]}"
        )
    read_checkpoint(ckpt_path, model_class)  # refuses a broken or unsafe file before Lightning reads it
    try:
        model = model_class.load_from_checkpoint(ckpt_path, map_location="cpu", weights_only=True).eval()
    except (KeyError, RuntimeError, TypeError, ValueError) as error:  # another model's weights or hyperparameters
        reason = str(error).strip().splitlines()[0]
        raise UsageError(f"--ckpt_path {ckpt_path}: not a checkpoint of {model_class.__name__} ({reason})") from None
    _check_finite(model, ckpt_path)
    example = example_input(model)
    if example is None:
        raise UsageError(
            f"{model_class.__name__} has no example_input_array: set it to a batch of one sample's shape in its"
            " __init__ (docs/contract.md), export traces the model with it"
        )
    # A batch of 2: with 1 the exporters would take the batch size for a constant.
    example = torch.zeros(2, *example.shape[1:], dtype=example.dtype)
    buffer = io.BytesIO()  # serialized first: written whole, and a full disk reads "disk full", not a torch error
    if format == "onnx":
        program = torch.onnx.export(
            model, (example,), dynamic_shapes=BATCH, input_names=["samples"], output_names=["logits"], verbose=False
        )
        buffer.write(program.model_proto.SerializeToString())
    else:
        program = torch.export.export(model, (example,), dynamic_shapes=BATCH)
        if format == "pt2":
            torch.export.save(program, buffer)
        else:  # traced from the captured graph: tracing the LightningModule trips over its `trainer` property
            torch.jit.save(torch.jit.trace(program.module(), example), buffer)
    write_atomically(output, buffer.getvalue())
    shape = ", ".join(str(size) for size in example.shape[1:])
    print(f"Wrote {output}: raw samples (N, {shape}) -> (N, {model(example).shape[-1]}) outputs")
    return output


def _check_finite(model: torch.nn.Module, ckpt_path: Path) -> None:
    # A run that diverged, or an edited file: the export would answer NaN for every sample, and say nothing.
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and not torch.isfinite(tensor).all():
            raise UsageError(
                f"--ckpt_path {ckpt_path}: {name} holds NaN or Inf values, so the model would output NaN; export a"
                " checkpoint of a run that did not diverge"
            )


def main(model_class: type, args: list[str] | None = None) -> Path:
    return errors.main(lambda: function_cli(export, args, model_class=model_class))
