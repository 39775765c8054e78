"""The modules a checkpoint was saved from, rebuilt as LightningCLI built them: its LightningModule and its
DataModule, each the class its saved hyperparameters name (`_class_path`, LightningCLI's record of a module chosen by
class path), imported only once that name is known to be a class (class_paths.py) and the file passed the safety
checks of checkpoints.read_checkpoint."""

from pathlib import Path

import lightning as L
import torch
from jsonargparse import ArgumentError
from lightning.pytorch.utilities.model_helpers import is_overridden

from lightning_runs.checkpoints.class_paths import import_named_class
from lightning_runs.checkpoints.loading import read_checkpoint
from lightning_runs.checkpoints.sharded import one_file
from lightning_runs.errors import UsageError, first_line
from lightning_runs.folders.layout import classes_of_run
from lightning_runs.private import saved_class_path

DATA_KEY = "datamodule_hyper_parameters"
# Rows of a data batch kept as the example: the export check runs the model eagerly at a few batch sizes around it.
EXAMPLE_ROWS = 16
# Where an example batch is taken from, in this order: the loaders of new samples first, the training one last.
LOADERS = (
    ("predict", "predict_dataloader"),
    ("test", "test_dataloader"),
    ("validate", "val_dataloader"),
    ("fit", "train_dataloader"),
)
HINT = (
    "set the model's example_input_array in its __init__ to a batch of one sample's shape"
    " (python -m pydoc lightning_runs.contract.parts)"
)


def saved_model(ckpt_path: Path, default: type[L.LightningModule]) -> L.LightningModule:
    """The checkpoint's LightningModule on the CPU, in eval mode: the class its hyperparameters name, or `default` for
    a checkpoint of a CLI that took no model class path. Each refusal is one line."""
    # Read with the default class's typed parameters first: nothing of the saved class has run yet.
    checkpoint = read_checkpoint(ckpt_path, default)
    dotted = saved_class_path(checkpoint.get("hyper_parameters"))
    if dotted is None and checkpoint.get("hyper_parameters") is None:  # no hyperparameters saved: its run's config
        dotted = classes_of_run(ckpt_path).get("model", {}).get("class_path")
    model_class = default if dotted is None else _imported(dotted, L.LightningModule, ckpt_path, "hyper_parameters")
    if model_class is not default:
        read_checkpoint(ckpt_path, model_class)  # again, with its own class's typed parameters
    try:
        # As Lightning rebuilds any checkpoint of LightningCLI: its `_instantiator` parses the saved arguments with
        # jsonargparse, so an argument saved as {class_path, init_args} (a network) is built as the CLI built it.
        with one_file(ckpt_path) as source:
            model = model_class.load_from_checkpoint(source, map_location="cpu", weights_only=True)
    except (ArgumentError, KeyError, RuntimeError, TypeError, ValueError) as error:  # weights or arguments of another
        name, reason = dotted_name(model_class), first_line(error)
        if dotted is None:  # LightningCLI records the class with the arguments save_hyperparameters() saves
            reason += "; the checkpoint names no class of its own: one that calls self.save_hyperparameters() does"
        elif "state_dict" in reason:  # Lightning's docs leave an injected network out of save_hyperparameters
            reason += "; an argument left out of save_hyperparameters (ignore=...) is rebuilt at its default"
        raise UsageError(f"--ckpt_path {ckpt_path}: not a checkpoint of {name} ({reason})") from None
    return model.eval()


def saved_data_class(checkpoint: dict, ckpt_path: Path) -> str | None:
    """The class path of the DataModule the checkpoint's run was fitted on (where it saved no hyperparameters, its
    run's config.yaml says), or None where neither names one."""
    if checkpoint.get(DATA_KEY) is None:
        return classes_of_run(ckpt_path).get("data", {}).get("class_path")
    return saved_class_path(checkpoint.get(DATA_KEY))


def data_inputs(ckpt_path: Path, model_class: type) -> torch.Tensor | None:
    """The inputs of the first batch the checkpoint's DataModule gives (its predict loader, else its test, val or
    train loader), as its batches give them to the model; None where the checkpoint names no DataModule."""
    dotted = saved_data_class(read_checkpoint(ckpt_path, model_class), ckpt_path)
    if dotted is None:
        return None
    data_class = _imported(dotted, L.LightningDataModule, ckpt_path, DATA_KEY)
    read_checkpoint(ckpt_path, model_class)  # again, with the DataModule's typed parameters now that it is imported
    given = [(stage, loader) for stage, loader in LOADERS if is_overridden(loader, data_class, L.LightningDataModule)]
    if not given:
        raise UsageError(f"{dotted} has no DataLoader to take an example batch from: {HINT}")
    stage, loader = given[0]
    try:  # the owner's code, on whatever files its saved arguments name
        with one_file(ckpt_path) as source:
            datamodule = data_class.load_from_checkpoint(source, map_location="cpu", weights_only=True)
        datamodule.setup(stage)
        batches = getattr(datamodule, loader)()
        batch = next(iter(batches[0] if isinstance(batches, list | tuple) else batches))
    except Exception as error:
        reason = f"{type(error).__name__}: {first_line(error)}"
        raise UsageError(f"{dotted} gave no {loader} batch ({reason}): {HINT}") from None
    inputs = batch[0] if isinstance(batch, list | tuple) and batch else batch
    if not isinstance(inputs, torch.Tensor):
        kind = type(batch).__name__
        raise UsageError(f"{dotted}'s {loader} batches are a {kind}, not a tensor or a tuple starting with one: {HINT}")
    return inputs[:EXAMPLE_ROWS]


def _imported(dotted: str, base: type, ckpt_path: Path, key: str) -> type:
    found = import_named_class(dotted, base)
    if found is None:
        raise UsageError(f"--ckpt_path {ckpt_path}: its {key} name {dotted!r}, which is no {base.__name__} class here")
    return found


def dotted_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
