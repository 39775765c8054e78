"""What the machinery reads from the owner's LightningModule and LightningDataModule: nothing else, and never a field
name of the example. docs/contract.md is the same list for readers.

From the DataModule, for the model the CLI wiring links (`required`): `num_classes` and `sample_shape`. Optional:
- `sample_kind`: "image" ((H, W) or (C, H, W) samples), "signal" ((L,) or (C, L)) or "table" ((F,)); decides
  which pictures a run gets (figures.py). Anything else, or none: no sample pictures.
From the LightningModule:
- `validation_step` / `test_step` return (N, C) logits for integer labels (confusion matrices, misclassified samples)
  or (N,) values for float targets (predicted-against-true and residual plots); returning nothing, the module is
  called on the inputs (tasks.py, figures.py);
  `predict_step` returns (N, C) class probabilities for predictions.csv (or (N,) values);
- `example_input_array` (Lightning's own attribute), a batch of the sample shape: export and the shape check of
  `predict` read it.
From the callbacks' configuration:
- the metric the best checkpoint monitors (`--checkpoint.monitor`, named `stage/name`); its test counterpart is
  `test/name`.
"""

from typing import Literal, get_args

import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_runs.errors import UsageError

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


def counterpart(metric: str | None, stage: str) -> str | None:
    """`val/f1` -> `test/f1`: the same metric of another stage, by the `stage/name` naming of metrics."""
    if not metric or "/" not in metric:
        return None
    return f"{stage}/{metric.split('/', 1)[1]}"


def example_input(model) -> torch.Tensor | None:
    """The model's `example_input_array` as one tensor (the first, where it is a tuple), or None."""
    example = getattr(model, "example_input_array", None)
    if isinstance(example, tuple | list) and example:
        example = example[0]
    return example if isinstance(example, torch.Tensor) else None


def required(name: str):
    """A `link_arguments` compute_fn reading the DataModule's `name` when the model is built, or refusing one that
    has none in one line."""

    def read(datamodule):
        value = getattr(datamodule, name, None)
        if value is None:
            raise UsageError(
                f"--data {type(datamodule).__module__}.{type(datamodule).__qualname__} has no {name}, which the model"
                f" is built with: give the DataModule a `{name}` attribute or property (docs/contract.md)"
            )
        # A shape as a list of ints: the model's hyperparameters then stay plain YAML in hparams.yaml.
        return [int(size) for size in value] if isinstance(value, torch.Size | tuple | list) else value

    return read
