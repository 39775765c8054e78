"""A LightningModule's `forward` as ONNX, TorchScript or torch.export (pt2) bytes whose batch axis takes any size,
exported from the module's own `example_input_array` (a tensor: one input; a tuple: several positional inputs; a dict:
keyword inputs), then loaded back and run at other batch sizes against the module itself. Where it cannot be, the line
names the cause measured: a forward that differs between two calls, the exporter's reason (which names the line that
fixes the batch size), or what the file did at another size. Nothing is written before every check passes."""

import importlib.util
import inspect
import io
import re
import warnings
from pathlib import Path

import torch
from torch.export import Dim

from lightning_runs.errors import UsageError, first_line
from lightning_runs.private import guards_added, lightning_modules_traceable

ONNX_NEEDS = ("onnx", "onnxscript", "onnxruntime")  # the `export` extra
TOLERANCE: dict = {"atol": 1e-4, "rtol": 1e-4, "equal_nan": True}  # float32 arithmetic reordered by another runtime


def example_of(model: torch.nn.Module) -> tuple[tuple, dict]:
    """(args, kwargs) of the module's example_input_array, taken whole."""
    example = getattr(model, "example_input_array", None)
    if isinstance(example, dict):
        return (), example
    if isinstance(example, tuple | list):
        return tuple(example), {}
    if isinstance(example, torch.Tensor):
        return (example,), {}
    raise UsageError(
        f"{type(model).__name__} has no example_input_array: set it in __init__ to a batch of inputs (a tensor, or a"
        " tuple of tensors for several), which export traces and checks the model with"
    )


def resized(inputs, size: int):
    """Every tensor of `inputs` (args or kwargs) with `size` rows: the example's rows over again, plus noise where
    they are real numbers (an example of zeros would check little else)."""
    if isinstance(inputs, dict):
        return {key: resized(value, size) for key, value in inputs.items()}
    if isinstance(inputs, tuple):
        return tuple(resized(value, size) for value in inputs)
    if not isinstance(inputs, torch.Tensor) or inputs.ndim == 0:
        return inputs
    rows = inputs[torch.arange(size) % len(inputs)]
    if not rows.is_floating_point():
        return rows  # token ids, category codes: other values could fall outside the model's tables
    scale = inputs.float().std().item() if inputs.numel() > 1 else 0.0
    noise = torch.randn(rows.shape, generator=torch.Generator().manual_seed(size)) * (scale or 1.0)
    return rows + noise.to(rows.dtype)


def named_outputs(output, name: str = "") -> list[tuple[str, torch.Tensor]]:
    """The tensors forward returns, named as the exported file names them: `output` alone, a dict's keys, `output_i`
    of a tuple (nested: `key_i`)."""
    if isinstance(output, torch.Tensor):
        return [(name or "output", output)]
    if isinstance(output, dict | list | tuple):
        items = output.items() if isinstance(output, dict) else enumerate(output, start=0)
        named = [(str(key) if isinstance(output, dict) or name else f"output_{key}", value) for key, value in items]
        return [pair for key, value in named for pair in named_outputs(value, f"{name}_{key}" if name else key)]
    raise UsageError(f"forward returned a {type(output).__name__}: export takes tensors, or tuples or dicts of them")


def input_names(args: tuple, kwargs: dict) -> list[str]:
    return [f"input_{i}" for i in range(len(args))] + list(kwargs)


def exported(model: torch.nn.Module, format: str, batch_size: int | None = None) -> bytes:
    """`batch_size`: the file takes that batch size only (no free batch axis), checked at it."""
    missing = [name for name in ONNX_NEEDS if format == "onnx" and importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(f"--format onnx needs {', '.join(missing)}: pip install 'lightning-runs[export]'")
    args, kwargs = example_of(model)
    size = len(next(t for t in [*args, *kwargs.values()] if isinstance(t, torch.Tensor)))
    if size < 2 or batch_size:  # from a batch of 1 the exporters take the batch size for a constant
        args, kwargs = resized(args, batch_size or 2), resized(kwargs, batch_size or 2)
    name = type(model).__name__
    first, second = (named_outputs(_eager(model, args, kwargs)) for _ in range(2))
    gaps = [(a.float() - b.float()).abs().max().item() for (_, a), (_, b) in zip(first, second, strict=True)]
    differs = max(gaps, default=0)
    if differs > 0:
        raise UsageError(
            f"{name}'s forward gave outputs {differs:.3g} apart on the same inputs: it samples, and an export of it"
            " could not be checked; make forward deterministic in eval mode (sample only while training)"
        )
    fixed = "" if batch_size else "; export at a fixed batch size with --batch_size N"
    batch, bound = Dim("batch", min=1), inspect.signature(model.forward).bind(*args, **kwargs).arguments
    dynamic = {key: {0: batch} if isinstance(value, torch.Tensor) else None for key, value in bound.items()}
    try:
        with guards_added() as guards:
            program = torch.export.export(model, args, kwargs, dynamic_shapes=None if batch_size else dynamic)
        content = _serialized(model, program, args, kwargs, format, [output for output, _ in first])
    except Exception as error:  # the exporter's refusal, and the line of forward that made the batch size a constant
        reason = f"{type(error).__name__}: {first_line(error)}"
        how = f"at a batch of {batch_size}" if batch_size else f"with a free batch size{_pinned(guards)}"  # ty: ignore[possibly-unresolved-reference]  # bound before anything in the try can raise
        raise UsageError(f"{name} cannot be exported {how} ({reason}){fixed}") from None
    for checked in (batch_size,) if batch_size else (1, size + 3):
        inputs, named = resized(args, checked), resized(kwargs, checked)
        try:
            actual = [t for _, t in named_outputs(_run(content, format, inputs, named))]
            expected = [t for _, t in named_outputs(_eager(model, inputs, named))]
            if len(actual) != len(expected):
                raise AssertionError(f"{len(actual)} outputs, not {len(expected)}")
            torch.testing.assert_close(actual, expected, **TOLERANCE)
        except Exception as error:
            reason = first_line(error)  # TorchScript's interpreter says what failed last, after the code that raised it
            reason = str(error).strip().splitlines()[-1] if "TorchScript interpreter" in reason else reason
            raise UsageError(f"{name}'s {format} file, run at a batch of {checked}: {reason}{fixed}") from None
    return content


def _pinned(guards: list) -> str:
    """Where forward made a dynamic size a constant (`Eq(s0, 2)`), as the line that did it."""
    frame = next((f for guard, f in guards if f is not None and re.fullmatch(r"Eq\(s\d+, \d+\)", guard)), None)
    return f": `{frame.line}` ({Path(frame.filename).name}:{frame.lineno}) makes it a constant" if frame else ""


def _eager(model, args: tuple, kwargs: dict):
    try:
        with torch.no_grad():
            return model(*args, **kwargs)
    except Exception as error:
        raise UsageError(
            f"{type(model).__name__}'s forward failed on its example_input_array ({first_line(error)})"
        ) from None


def _serialized(model, program, args: tuple, kwargs: dict, format: str, outputs: list[str]) -> bytes:
    buffer = io.BytesIO()  # serialized first: written whole
    if format == "onnx":  # from the program: given the module, torch.onnx would fix the batch size it found fixed
        onnx = torch.onnx.export(program, input_names=input_names(args, kwargs), output_names=outputs, verbose=False)
        buffer.write(onnx.model_proto.SerializeToString())  # ty: ignore[missing-union-attribute]  # None only where given a file
    elif format == "pt2":
        torch.export.save(program, buffer)
    else:  # traced from the module: a trace of the captured graph would fix the size of every reshape
        with lightning_modules_traceable(), torch.no_grad():
            torch.jit.save(torch.jit.trace(model, args, example_kwarg_inputs=kwargs or None, strict=False), buffer)
    return buffer.getvalue()


def _run(content: bytes, format: str, args: tuple, kwargs: dict):
    if format == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(content, providers=["CPUExecutionProvider"])
        feed = dict(zip(input_names(args, kwargs), (t.numpy() for t in [*args, *kwargs.values()]), strict=True))
        return [torch.from_numpy(array) for array in session.run(None, feed)]
    if format == "torchscript":
        with warnings.catch_warnings():  # the check's own load: the user chose the format, warned at the trace
            warnings.filterwarnings("ignore", message=r"`torch\.jit\.load` is deprecated", category=FutureWarning)
            loaded = torch.jit.load(io.BytesIO(content))
    else:
        loaded = torch.export.load(io.BytesIO(content)).module()
    with torch.no_grad():
        return loaded(*args, **kwargs)
