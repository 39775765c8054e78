"""A LightningModule's `forward` as the bytes of an ONNX, TorchScript or torch.export (pt2) file whose batch axis takes
any size: exported from an example batch, then loaded back from those bytes and run at other batch sizes against the
model itself. A model that cannot be exported so is refused, saying why, before anything is written.

An exporter can fix the batch size without saying so: a forward that reshapes with `len(x)` made torch.onnx write a
file taking batches of the example's size only, and a TorchScript trace of the graph torch.export captured fixes the
size of every reshape; a check at the example's own batch size sees neither. torch 2.14.
"""

import importlib.util
import io
import warnings

import torch
from torch.export import Dim

from lightning_runs.errors import UsageError, first_line
from lightning_runs.export.saved_modules import dotted_name
from lightning_runs.private import lightning_modules_traceable

BATCH = ({0: Dim("batch", min=1)},)  # the first dimension of the input stays free
INPUT = "inputs"  # the ONNX input's name; its outputs are named as outputs() names them
ONNX_NEEDS = ("onnx", "onnxscript", "onnxruntime")  # the `export` extra: torch.onnx's and the check's
TOLERANCE = {"atol": 1e-4, "rtol": 1e-4, "equal_nan": True}  # float32 arithmetic reordered by another runtime


def exported(model: torch.nn.Module, example: torch.Tensor, format: str) -> bytes:
    """The file's bytes, checked at batch sizes 1 and the example's + 3; UsageError where the batch axis cannot be
    left free (the exporter's reason, or what the file did at the other size)."""
    missing = [name for name in ONNX_NEEDS if format == "onnx" and importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(f"--format onnx needs {', '.join(missing)}: pip install 'lightning-runs[export]'")
    if len(example) < 2:  # from a batch of 1 the exporters would take the batch size for a constant
        example = batch_of(example, 2)
    names = [name for name, _ in outputs(eager(model, example))]
    refused = f"{dotted_name(type(model))} cannot be exported with a free batch size"
    try:
        program = torch.export.export(model, (example,), dynamic_shapes=BATCH)
        content = _serialized(model, program, example, format, names)
    except Exception as error:  # the exporter's refusal: a batch size the code fixes, an operator it lacks
        raise UsageError(f"{refused} ({type(error).__name__}: {first_line(error)})") from None
    for size in (1, len(example) + 3):
        inputs = batch_of(example, size)
        expected = [tensor for _, tensor in outputs(eager(model, inputs))]
        try:
            actual = [tensor for _, tensor in outputs(_run(content, format, inputs))]
            if len(actual) != len(expected):
                raise AssertionError(f"{len(actual)} outputs, not {len(expected)}")
            for got, want in zip(actual, expected, strict=True):
                torch.testing.assert_close(got, want, **TOLERANCE)
        except Exception as error:  # it fails there, or answers otherwise than the model
            raise UsageError(f"{refused}: the {format} file run at a batch of {size}: {_reason(error)}") from None
    return content


def eager(model: torch.nn.Module, inputs: torch.Tensor):
    try:
        with torch.no_grad():
            return model(inputs)
    except Exception as error:  # the example does not fit the model's forward
        where = f"{dotted_name(type(model))}'s forward on inputs {shape_text(['N', *inputs.shape[1:]])}"
        raise UsageError(f"{where} failed ({type(error).__name__}: {first_line(error)})") from None


def outputs(output, name: str = "outputs") -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) of each output, in the order the exporters flatten them: `outputs` for a lone tensor, the
    keys of a dict, `outputs_0`, `outputs_1`, ... for a tuple."""
    if isinstance(output, torch.Tensor):
        return [(name, output)]
    if isinstance(output, dict):
        return [pair for key, value in output.items() for pair in outputs(value, str(key))]
    if isinstance(output, list | tuple):
        return [pair for i, value in enumerate(output) for pair in outputs(value, f"{name}_{i}")]
    raise UsageError(f"forward returned a {type(output).__name__}: export takes tensors, or tuples or dicts of them")


def shapes(model: torch.nn.Module, example: torch.Tensor) -> list[tuple[str, str]]:
    """(name, shape) of each output, as `(N, 3)`: a dimension that follows the batch size is N."""
    small, large = (outputs(eager(model, batch_of(example, size))) for size in (2, 5))
    return [
        (name, shape_text([size if size == other else "N" for size, other in zip(a.shape, b.shape, strict=False)]))
        for (name, a), (_, b) in zip(small, large, strict=True)
    ]


def shape_text(sizes: list) -> str:
    """`(N, 13)`, `(N,)`, `()`."""
    return f"({sizes[0]},)" if len(sizes) == 1 else f"({', '.join(str(size) for size in sizes)})"


def batch_of(example: torch.Tensor, size: int) -> torch.Tensor:
    """`size` samples: the example's rows over again, plus noise where they are real numbers (an example of zeros
    would check little else)."""
    rows = example[torch.arange(size) % len(example)]
    if not rows.is_floating_point():
        return rows  # token ids, category codes: other values could fall outside the model's tables
    generator = torch.Generator().manual_seed(size)
    scale = example.float().std().item() if example.numel() > 1 else 0.0
    noise = torch.randn(rows.shape, generator=generator) * (scale if scale > 0 else 1.0)
    return rows + noise.to(rows.dtype)


def _reason(error: Exception) -> str:
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()] or [type(error).__name__]
    if isinstance(error, AssertionError):  # assert_close: "not close!", then how many and by how much
        return " ".join(lines[:3])
    if "TorchScript interpreter" in lines[0]:  # its traceback first, the error itself on the last line
        return lines[-1]
    return first_line(error)


def _serialized(model, program, example: torch.Tensor, format: str, names: list[str]) -> bytes:
    buffer = io.BytesIO()  # serialized first: written whole, and a full disk reads "disk full", not a torch error
    if format == "onnx":
        # From the program, not the module: given a module whose code fixes the batch size, torch.onnx applies the
        # exporter's suggested fix (`batch = 2`) and exports again, a file for batches of the example's size alone.
        onnx = torch.onnx.export(program, input_names=[INPUT], output_names=names, verbose=False)
        buffer.write(onnx.model_proto.SerializeToString())
    elif format == "pt2":
        torch.export.save(program, buffer)
    else:  # traced from the module: a trace of the captured graph fixes the size of every reshape
        with lightning_modules_traceable(), torch.no_grad():
            torch.jit.save(torch.jit.trace(model, example, strict=False), buffer)
    return buffer.getvalue()


def _run(content: bytes, format: str, inputs: torch.Tensor):
    if format == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(content, providers=["CPUExecutionProvider"])
        return [torch.from_numpy(array) for array in session.run(None, {INPUT: inputs.numpy()})]
    if format == "torchscript":
        with warnings.catch_warnings():  # the check's own load: the user chose the format, and was warned at the trace
            warnings.filterwarnings("ignore", message=r"`torch\.jit\.load` is deprecated", category=FutureWarning)
            loaded = torch.jit.load(io.BytesIO(content))
    else:
        loaded = torch.export.load(io.BytesIO(content)).module()
    with torch.no_grad():
        return loaded(inputs)
