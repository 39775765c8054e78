"""What the machinery reads from the owner's LightningModule and LightningDataModule: nothing else, and never a field
name of the example (`python -m pydoc lightning_runs.contract.parts` shows this list wherever the library is
installed). Every part is optional: a module or DataModule without it loses only what reads it.

From the DataModule, where the model's __init__ asks for them (links.py: model parameter <- attribute):
- `num_classes` -> `num_classes`; `sample_shape` -> `input_shape` (else read from one batch of the command's loader);
  a parameter with a default keeps it where the data has no such part, one without is refused in one line;
- `sample_kind`: "image" ((H, W) or (C, H, W) samples), "signal" ((L,) or (C, L)) or "table" ((F,)); decides
  which sample pictures a run gets (pictures/callbacks.py). Anything else, or none: no sample pictures.
From the LightningModule (any, chosen with `--model <class path>`):
- what it logs, named `stage/name` or `stage_name` (names.py); `configure_callbacks()` returning a ModelCheckpoint
  or EarlyStopping says what the run's best checkpoint and early stopping watch (monitored.py);
- what `validation_step` / `test_step` / `predict_step` return, described by its shapes
  (pictures/callbacks.py, predictions/writer.py):
  (N, C) logits for integer labels or (N,) values for float targets get their pictures; returning nothing, the
  module is called on the inputs in the epochs whose figures are drawn (tasks.py);
- `example_input_array` (Lightning's own attribute), a batch of the sample shape: export and the shape check of
  `predict` read it (export falls back to one batch of the data);
- its networks: its submodules that hold parameters (`networks`), which `--compile` compiles and FSDP shards.
From the callbacks' configuration:
- the metric the best checkpoint monitors (`--checkpoint.monitor`); its test counterpart is `test/name` (or
  `test_name`).
"""

from typing import Literal, get_args

import torch
from lightning.pytorch.callbacks import ModelCheckpoint

SampleKind = Literal["image", "signal", "table"]
KINDS = get_args(SampleKind)


def sample_kind(datamodule) -> str | None:
    """The DataModule's `sample_kind`, or None where it gives none (or one this machinery does not draw)."""
    kind = getattr(datamodule, "sample_kind", None)
    return kind if kind in KINDS else None


def monitored_checkpoint(trainer) -> ModelCheckpoint | None:
    """The checkpoint callback that keeps the best score of a metric (best.ckpt), or None."""
    return next((c for c in trainer.checkpoint_callbacks if isinstance(c, ModelCheckpoint) and c.monitor), None)


def monitored(trainer) -> str | None:
    """The metric the best checkpoint is chosen on, whatever a copy configures."""
    best = monitored_checkpoint(trainer)
    return None if best is None else best.monitor


def example_input(model) -> torch.Tensor | None:
    """The model's `example_input_array` as one tensor (the first, where it is a tuple), or None."""
    example = getattr(model, "example_input_array", None)
    if isinstance(example, tuple | list) and example:
        example = example[0]
    return example if isinstance(example, torch.Tensor) else None


def networks(module: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """A module's networks, with their names: each child that holds parameters and has a forward of its own;
    containers (ModuleList, ModuleDict) are searched inside. Metrics (torchmetrics, which update their state in
    forward) and parameter-free parts (losses) are none: nothing in them to compile or shard."""
    found = []
    for name, child in module.named_children():
        if _is_metric(child) or next(child.parameters(), None) is None:
            continue
        if type(child).forward is torch.nn.Module.forward:  # a container: it is never called itself
            found += [(f"{name}.{inner}", network) for inner, network in networks(child)]
        else:
            found.append((name, child))
    return found


def _is_metric(module: torch.nn.Module) -> bool:
    return any(cls.__module__.startswith("torchmetrics") for cls in type(module).__mro__)
