"""What the model is built with from its data: links, not demands.

A LightningModule chosen with `--model <class path>` gets the DataModule's parts only where its `__init__` asks for
them by name (DATA_LINKS: model parameter <- DataModule attribute), and only where the user gave no value (on the
command line or in a config); where the data has no such part, the parameter keeps its default, if it has one. A
module that takes neither needs neither from its data. Where the model takes `input_shape` and the DataModule has no
`sample_shape`, it is read from one batch of the command's own loader.

LightningCLI's `link_arguments` cannot do this: a link's target must exist in every model's signature (`No action for
key "model.num_classes"` for a module without it), and its source must be an attribute the data has.
"""

import importlib
import inspect
import json

import lightning as L
import torch
from jsonargparse import Namespace

from lightning_runs.contract.names import DATA_LINKS
from lightning_runs.errors import UsageError

# Stand-ins, at parse time only, for a linked parameter the model requires (no default) and nobody gave: the parser
# would refuse it before the data exists; link_data_to_model replaces them from the data before the model is built.
PLACEHOLDERS = {"num_classes": 1, "input_shape": [1]}
# subcommand -> (setup stage, the loader a batch is read from)
LOADERS = {
    "fit": ("fit", "train_dataloader"),
    "validate": ("validate", "val_dataloader"),
    "test": ("test", "test_dataloader"),
    "predict": ("predict", "predict_dataloader"),
}


def model_parameters(class_path: str) -> dict[str, inspect.Parameter]:
    module, _, name = class_path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)  # imported by the parser already
    return dict(inspect.signature(cls).parameters)


def placeholders(model_class: type | None, given: set[str]) -> list[str]:
    """`--model.num_classes=1` and the like for each parameter of DATA_LINKS that `model_class.__init__` requires and
    the user did not give (`given`: `model.num_classes`), so that it can come from the data."""
    if model_class is None:
        return []
    parameters = inspect.signature(model_class).parameters
    required = [
        name
        for name in DATA_LINKS
        if name in parameters and parameters[name].default is inspect.Parameter.empty and f"model.{name}" not in given
    ]
    return [f"--model.{name}={json.dumps(PLACEHOLDERS[name])}" for name in required]


def link_data_to_model(config, datamodule, subcommand: str, given: set[str]) -> None:
    """Fill `config.model.init_args` with what the model's signature asks of `datamodule` (DATA_LINKS), in place: the
    run's config.yaml then records the values the model was built with."""
    parameters = model_parameters(config.model.class_path)
    init_args = config.model.init_args if config.model.get("init_args") is not None else Namespace()
    for parameter, attribute in DATA_LINKS.items():
        if parameter not in parameters or f"model.{parameter}" in given:
            continue
        value = getattr(datamodule, attribute, None)
        if value is None and attribute == "sample_shape":
            value = shape_from_batch(datamodule, subcommand)
        if value is None and config.get("ckpt_path") is not None:
            continue  # an evaluation or a resume: the checkpoint's value, already in the config
        if value is None and parameters[parameter].default is not inspect.Parameter.empty:
            continue  # the model's own default (`num_classes: int = 3`), where the data says nothing
        if value is None:
            raise UsageError(
                f"--data {_named(datamodule)} has no {attribute}, which --model {config.model.class_path} takes as"
                f" {parameter}: give the DataModule a `{attribute}` attribute, or give --model.{parameter}"
                " (python -m pydoc lightning_runs.contract.parts)"
            )
        # A shape as a list of ints: the model's hyperparameters then stay plain YAML in hparams.yaml.
        init_args[parameter] = [int(size) for size in value] if isinstance(value, torch.Size | tuple | list) else value
    config.model.init_args = init_args


def shape_from_batch(datamodule, subcommand: str) -> list[int] | None:
    """One sample's shape, from the first batch of the command's loader (its inputs: a tensor batch, or the first
    element of a tuple or list); None where there is no such batch."""
    stage, loader_name = LOADERS[subcommand]
    datamodule.setup(stage)  # called again by the Trainer: a DataModule's setup must not mind (parts.py)
    try:
        batch = next(iter(getattr(datamodule, loader_name)()), None)
    except NotImplementedError:  # Lightning's default for a loader the DataModule does not define
        return None
    inputs = batch[0] if isinstance(batch, tuple | list) and batch else batch
    return list(inputs.shape[1:]) if isinstance(inputs, torch.Tensor) else None


def _named(datamodule: L.LightningDataModule) -> str:
    return f"{type(datamodule).__module__}.{type(datamodule).__qualname__}"
