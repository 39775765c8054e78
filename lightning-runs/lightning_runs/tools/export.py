"""`python -m <package> export --ckpt_path <file> --format onnx|torchscript|pt2`: the trained module for serving.

The module is the checkpoint's own class (LightningCLI records it; a module that saves no hyperparameters is named by
its run's config.yaml), rebuilt by Lightning's `load_from_checkpoint`, exported from its `example_input_array` and
checked at other batch sizes (export/exporting.py). Written beside the checkpoint unless `--output` says where.
"""

import importlib
import io
from pathlib import Path
from typing import Literal

import lightning as L
import torch
import yaml

from lightning_runs.atomic import write_atomically
from lightning_runs.checkpoints.checkpoint_io import read_checkpoint, refuse_non_finite
from lightning_runs.checkpoints.sharded import is_sharded
from lightning_runs.errors import UsageError, first_line
from lightning_runs.export.exporting import example_of, exported, input_names, named_outputs
from lightning_runs.private import saved_class_path
from lightning_runs.run_folders import read_run_file, run_of_checkpoint
from lightning_runs.tools.function_cli import function_cli

SUFFIXES = {"onnx": ".onnx", "torchscript": ".torchscript.pt", "pt2": ".pt2"}


def export(ckpt_path: Path, format: Literal["onnx", "torchscript", "pt2"] = "onnx", output: Path | None = None) -> Path:
    """Write the checkpoint's module in `format` and return where.

    Args:
        ckpt_path: a checkpoint a fit wrote, e.g. runs/<name>/version_0/checkpoints/best.ckpt
        format: onnx (onnxruntime, most serving stacks), torchscript (deprecated in PyTorch, still loadable) or pt2
            (torch.export.load, what PyTorch recommends now)
        output: the file to write; by default beside the checkpoint (best.onnx)
    """
    ckpt_path = Path(ckpt_path)
    output = Path(output or ckpt_path.with_suffix(SUFFIXES[format]))
    if output.suffix == ".ckpt" or (output.exists() and output.resolve() == ckpt_path.resolve()):
        raise UsageError(f"--output {output}: a checkpoint; an export never replaces one, give another file")
    model = saved_model(ckpt_path)
    refuse_non_finite(model.state_dict(), output)  # NaN weights would check out: NaN equals NaN
    content = exported(model, format)
    write_atomically(output, content)
    args, kwargs = example_of(model)
    tensors = zip(input_names(args, kwargs), [*args, *kwargs.values()], strict=True)
    inputs = ", ".join(f"{name} {tuple(t.shape[1:])} {str(t.dtype).removeprefix('torch.')}" for name, t in tensors)
    with torch.no_grad():
        outputs = ", ".join(f"{name} {tuple(t.shape[1:])}" for name, t in named_outputs(model(*args, **kwargs)))
    print(f"Wrote {output}: per sample, inputs {inputs} -> outputs {outputs}; any batch size")
    return output


def saved_model(ckpt_path: Path) -> L.LightningModule:
    """The checkpoint's LightningModule, on the CPU, in eval mode."""
    checkpoint = read_checkpoint(ckpt_path)  # a sharded folder consolidated, once
    dotted = saved_class_path(checkpoint.get("hyper_parameters") or {})
    run = run_of_checkpoint(ckpt_path)
    if dotted is None and run is not None:  # saved no hyperparameters: its run's config names its class
        dotted = ((yaml.safe_load(read_run_file(run / "config.yaml")) or {}).get("model") or {}).get("class_path")
    if dotted is None:
        raise UsageError(
            f"{ckpt_path}: names no LightningModule class (LightningCLI records it, and a run's config.yaml); export"
            " a checkpoint a run of this project saved"
        )
    module, _, name = dotted.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name, None)
    except ImportError as error:
        raise UsageError(f"{ckpt_path}: its class {dotted} cannot be imported here ({first_line(error)})") from None
    if not (isinstance(cls, type) and issubclass(cls, L.LightningModule)):
        raise UsageError(f"{ckpt_path}: its class {dotted} is no LightningModule here")
    source = ckpt_path
    if is_sharded(ckpt_path):  # load_from_checkpoint reads a file: the consolidated one, from memory
        source = io.BytesIO()
        torch.save(checkpoint, source)
        source.seek(0)
    try:
        return cls.load_from_checkpoint(source, map_location="cpu", weights_only=True).eval()
    except (KeyError, RuntimeError, TypeError, ValueError) as error:
        raise UsageError(f"{ckpt_path}: not a checkpoint of {dotted} ({first_line(error)})") from None


def main(cli_main, args: list[str] | None = None) -> Path:
    return function_cli(export, args)
