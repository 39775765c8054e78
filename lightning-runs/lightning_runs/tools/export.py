"""`python -m <package> export --ckpt_path <file> --format onnx|torchscript|pt2`: the trained module for serving.

The module is built as test and predict build it (cli/evaluation.py: the run's config.yaml, then the checkpoint's
hyperparameters, then the `--model.*` and `--data.*` options typed here, which are predict's), the
checkpoint's weights loaded into it, exported from its `example_input_array` and checked at other batch sizes
(export/exporting.py); `--batch_size N` exports at that batch alone, where a forward fixes it (`len(x)`). Written beside
the checkpoint unless `--output` says where.
"""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import lightning as L
import torch
from jsonargparse.typing import PositiveInt
from lightning.pytorch.utilities.model_helpers import is_overridden

from lightning_runs.checkpoints.checkpoint_io import read_checkpoint, refuse_non_finite
from lightning_runs.cli import RunsCLI
from lightning_runs.cli.evaluation import BUILDING, say_evaluated
from lightning_runs.errors import UsageError, first_line
from lightning_runs.export.exporting import example_of, exported, input_names, named_outputs, resized
from lightning_runs.tools.function_cli import check_output, function_cli, write_output

SUFFIXES = {"onnx": ".onnx", "torchscript": ".torchscript.pt", "pt2": ".pt2"}
# How each format's file starts: an existing --output is replaced only where it is an export (ONNX's protobuf opens with
# its ir_version field; TorchScript and pt2 are zip archives).
MAGIC = {"onnx": b"\x08", "torchscript": b"PK\x03\x04", "pt2": b"PK\x03\x04"}


def export(
    ckpt_path: Path,
    format: Literal["onnx", "torchscript", "pt2"] = "onnx",
    output: Path | None = None,
    batch_size: PositiveInt | None = None,
    cli_main: Callable | None = None,
    args: Sequence[str] = (),
) -> Path:
    """Write the checkpoint's module, built as predict builds it, in `format`; other options are predict's (--model.*).

    Args:
        ckpt_path: a checkpoint a fit wrote, e.g. runs/<name>/version_0/checkpoints/best.ckpt
        format: onnx (onnxruntime, most serving stacks), torchscript (deprecated in PyTorch, still loadable) or pt2
            (torch.export.load, what PyTorch recommends now)
        output: the file to write; by default beside the checkpoint (best.onnx)
        batch_size: export at this batch size only, where the free batch size fails (a forward using `len(x)`)
        args: predict's options for the module and data, such as [--model.lr=0.1]; any option not export's goes here
    """
    ckpt_path = Path(ckpt_path)
    output = Path(output or ckpt_path.with_suffix(SUFFIXES[format]))
    if output.suffix == ".ckpt" or (output.exists() and output.resolve() == ckpt_path.resolve()):
        raise UsageError(f"--output {output}: a checkpoint; an export never replaces one, give another file")
    mine = MAGIC[format]  # how an export of this format starts: the file it may replace
    check_output(output, lambda head: head.startswith(mine), "export")  # before the model's build and export
    model = built_model(ckpt_path, cli_main, args)
    refuse_non_finite(model.state_dict(), output)  # NaN weights would check out: NaN equals NaN
    content = exported(model, format, batch_size)
    write_output(output, content, lambda head: head.startswith(mine), "export")
    args, kwargs = example_of(model)
    args, kwargs = (resized(args, batch_size), resized(kwargs, batch_size)) if batch_size else (args, kwargs)
    tensors = zip(input_names(args, kwargs), [*args, *kwargs.values()], strict=True)
    inputs = ", ".join(f"{name} {tuple(t.shape[1:])} {str(t.dtype).removeprefix('torch.')}" for name, t in tensors)
    with torch.no_grad():
        outputs = ", ".join(f"{name} {tuple(t.shape[1:])}" for name, t in named_outputs(model(*args, **kwargs)))
    batch = f"a batch of {batch_size} only" if batch_size else "any batch size"
    print(f"Wrote {output}: per sample, inputs {inputs} -> outputs {outputs}; {batch}")
    return output


def built_model(ckpt_path: Path, cli_main: Callable | None, options: Sequence[str]) -> L.LightningModule:
    """The checkpoint's LightningModule built as predict builds it, its weights loaded, on the CPU, in eval mode."""
    checkpoint = read_checkpoint(ckpt_path)  # once: the build below reads the same file from memory
    say_evaluated("export", ckpt_path, None)
    token = BUILDING.set(True)
    try:
        # No project's CLI: the checkpoint (or --model) names the class.
        build = cli_main or (lambda args: RunsCLI(L.LightningModule, args=args))
        cli = build(["predict", f"--ckpt_path={ckpt_path}", *options])
    finally:
        BUILDING.reset(token)
    model = cli.model
    if type(model) is L.LightningModule:
        raise UsageError(
            f"{ckpt_path}: names no LightningModule class (LightningCLI records it, and a run's config.yaml); give"
            " --model <class>, or export a checkpoint a run of this project saved"
        )
    if is_overridden("configure_model", model):  # as load_from_checkpoint: layers made there exist before the load
        model.configure_model()
    model.on_load_checkpoint(checkpoint)
    try:
        model.load_state_dict(checkpoint["state_dict"], strict=model.strict_loading is not False)
    except (KeyError, RuntimeError, TypeError, ValueError) as error:
        name = type(model).__name__
        raise UsageError(f"{ckpt_path}: its weights do not fit {name} as built ({first_line(error)})") from None
    return model.cpu().eval()


def main(cli_main, args: list[str] | None = None) -> Path:
    return function_cli(export, args, cli_main=cli_main)
