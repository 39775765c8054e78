"""`python -m project.tools.export --ckpt_path <file> --format onnx|torchscript|pt2`: the trained model for serving.

The exported model is the LightningModule's own `forward`, normalization included, so raw (N, 8, 8) pixels in
0-16 go straight in and (N, num_classes) logits come out, for any batch size N. The checkpoint is read as the CLI
reads one (refused in one line if it is not safe or not whole), the output is written atomically, and the input
is never overwritten.
"""

import io
from pathlib import Path
from typing import Literal

import torch
from jsonargparse import CLI
from torch.export import Dim

from project.core import errors
from project.core.atomic import write_atomically
from project.core.checkpoints import read_checkpoint
from project.core.errors import UsageError
from project.model import DigitsClassifier

SUFFIXES = {"onnx": ".onnx", "torchscript": ".torchscript.pt", "pt2": ".pt2"}
EXAMPLE = torch.zeros(2, 8, 8)  # a batch of 2: with 1 the exporters would take the batch size for a constant
BATCH = ({0: Dim("batch", min=1)},)  # the first dimension of `images` stays free


def export(
    ckpt_path: Path,
    format: Literal["onnx", "torchscript", "pt2"] = "onnx",
    output: Path | None = None,
) -> Path:
    """Write the checkpoint's model in `format` and return where.

    Args:
        ckpt_path: a checkpoint written by `python -m project fit`, e.g. runs/digits/version_0/checkpoints/best.ckpt
        format: onnx (onnxruntime and most serving stacks), torchscript (torch.jit.load, C++ libtorch; deprecated
            in PyTorch, still loadable) or pt2 (torch.export.load, the format PyTorch recommends now)
        output: the file to write (replaced if it exists, never the checkpoint); by default beside the
            checkpoint, e.g. best.onnx
    """
    ckpt_path, output = Path(ckpt_path), Path(output or Path(ckpt_path).with_suffix(SUFFIXES[format]))
    if output.resolve() == ckpt_path.resolve() or (output.exists() and output.samefile(ckpt_path)):
        raise UsageError(f"--output {output}: that is the checkpoint itself; give another file")
    read_checkpoint(ckpt_path, DigitsClassifier)  # refuses a broken or unsafe file before Lightning reads it
    try:
        model = DigitsClassifier.load_from_checkpoint(ckpt_path, map_location="cpu", weights_only=True).eval()
    except (KeyError, RuntimeError, TypeError, ValueError) as error:  # another model's weights or hyperparameters
        reason = str(error).strip().splitlines()[0]
        raise UsageError(
            f"--ckpt_path {ckpt_path}: not a checkpoint of {DigitsClassifier.__name__} ({reason})"
        ) from None
    buffer = io.BytesIO()  # serialized first: written whole, and a full disk reads "disk full", not a torch error
    if format == "onnx":
        program = torch.onnx.export(
            model, (EXAMPLE,), dynamic_shapes=BATCH, input_names=["images"], output_names=["logits"], verbose=False
        )
        buffer.write(program.model_proto.SerializeToString())
    else:
        program = torch.export.export(model, (EXAMPLE,), dynamic_shapes=BATCH)
        if format == "pt2":
            torch.export.save(program, buffer)
        else:  # traced from the captured graph: tracing the LightningModule trips over its `trainer` property
            torch.jit.save(torch.jit.trace(program.module(), EXAMPLE), buffer)
    write_atomically(output, buffer.getvalue())
    print(f"Wrote {output}: raw (N, 8, 8) pixels in 0-16 -> (N, {model.hparams.num_classes}) logits")
    return output


def main(args: list[str] | None = None) -> Path:
    return errors.main(lambda: CLI(export, args=args, as_positional=False))


if __name__ == "__main__":
    main()
