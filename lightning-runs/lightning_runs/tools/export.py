"""`python -m <package> export --ckpt_path <file> --format onnx|torchscript|pt2`: the trained model for serving.

The exported model is the checkpoint's LightningModule (whatever class its run was fitted with) and its own `forward`:
it takes what that forward takes, inputs as the run's DataModule batches give them, for any batch size N, and gives
its outputs. The example it is exported from is the model's `example_input_array`, or else a batch of the
checkpoint's DataModule (contract/parts.py). The checkpoint is read as the CLI reads one (refused in one line if it is
not safe or not whole), the file is checked at other batch sizes against the model before it is written, atomically,
and the input is never overwritten.
"""

from pathlib import Path
from typing import Literal

import torch

from lightning_runs import errors
from lightning_runs.atomic import write_atomically
from lightning_runs.checkpoints.loading import read_checkpoint
from lightning_runs.contract.parts import example_input
from lightning_runs.errors import UsageError
from lightning_runs.export.formats import exported, shape_text, shapes
from lightning_runs.export.saved_modules import HINT, data_inputs, dotted_name, saved_data_class, saved_model
from lightning_runs.tools.function_cli import function_cli

SUFFIXES = {"onnx": ".onnx", "torchscript": ".torchscript.pt", "pt2": ".pt2"}


def export(
    model_class: type,
    ckpt_path: Path,
    format: Literal["onnx", "torchscript", "pt2"] = "onnx",
    output: Path | None = None,
) -> Path:
    """Write the checkpoint's model in `format` and return where.

    Args:
        model_class: the project's LightningModule, for a checkpoint that names no class (a CLI without model class
            paths)
        ckpt_path: a checkpoint written by `python -m <package> fit`, e.g. runs/<name>/version_0/checkpoints/best.ckpt
        format: onnx (onnxruntime and most serving stacks), torchscript (torch.jit.load, C++ libtorch; deprecated
            in PyTorch, still loadable) or pt2 (torch.export.load, the format PyTorch recommends now)
        output: the file to write (replaced if it exists, never the checkpoint); by default beside the
            checkpoint, e.g. best.onnx
    """
    ckpt_path, output = Path(ckpt_path), Path(output or Path(ckpt_path).with_suffix(SUFFIXES[format]))
    read_checkpoint(ckpt_path)  # named first, not the --output derived from it; its load is cached for the reads below
    if output.resolve() == ckpt_path.resolve() or (output.exists() and output.samefile(ckpt_path)):
        raise UsageError(f"--output {output}: that is the checkpoint itself; give another file")
    if output.is_dir():
        raise UsageError(f"--output {output}: a folder; give a file name, such as {output / 'model'}{SUFFIXES[format]}")
    if not output.parent.is_dir():
        raise UsageError(
            f"--output {output}: no folder {output.parent} to write it in; make it first, or give a file in a folder"
            " that exists"
        )
    if output.suffix == ".ckpt" or (output.exists() and not output.name.endswith(SUFFIXES[format])):
        raise UsageError(  # an export replaces only an earlier export of its format, never a run's checkpoint
            f"--output {output}: an existing file that is not a {format} export, or a checkpoint; give a new file"
            f" or one ending in {SUFFIXES[format]}"
        )
    model = saved_model(ckpt_path, model_class)  # the class the checkpoint names, or model_class
    _check_finite(model, ckpt_path)
    data = saved_data_class(read_checkpoint(ckpt_path, type(model)), ckpt_path)
    example = example_input(model)
    if example is None:
        example = data_inputs(ckpt_path, type(model))
    if example is None:
        raise UsageError(
            f"{dotted_name(type(model))} has no example_input_array and the checkpoint names no DataModule to take a"
            f" batch from: {HINT}, export traces the model with it"
        )
    write_atomically(output, exported(model, example, format))
    inputs = shape_text(["N", *example.shape[1:]]) + ("" if example.dtype == torch.float32 else f" {example.dtype}")
    given = f"as {data} gives them" if data else f"shaped as {dotted_name(type(model))}'s example_input_array"
    named = shapes(model, example)
    said = f" {named[0][1]}" if len(named) == 1 else ": " + ", ".join(f"{name} {shape}" for name, shape in named)
    print(f"Wrote {output}: inputs {inputs} {given} -> outputs{said}")
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
