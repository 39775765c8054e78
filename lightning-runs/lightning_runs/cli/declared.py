"""What a fit's module is given is declared, never defaulted into: with no DataModule the module brings its own
`train_dataloader`, and an argument of the default model that the project's cli.py links from the data (`sample_shape`
to `input_shape`) comes from the data or the command, never from the default model's own default (the default data's)
where another DataModule names none. Both are one line before training, not a traceback inside forward."""

from collections.abc import Callable
from functools import cache

from lightning.pytorch.utilities.model_helpers import is_overridden

from lightning_runs.errors import UsageError


def check_declared(model, datamodule, config, parser=None, explicit: Callable | None = None) -> None:
    """`parser`: the fit's, where its links are checked (a RunsArgumentParser: the project's link_arguments);
    `explicit()`: the fit's options parsed without defaults (what was typed or in a config file), read only where a
    link has no source. A value given by hand counts even where it is the class's default (`num_classes 10`)."""
    name = type(model).__name__
    if datamodule is None:
        if not is_overridden("train_dataloader", model):
            raise UsageError(
                f"{name} has no train_dataloader and the command names no DataModule: give --data <class> (a"
                " LightningDataModule); the default data goes with the default model only"
            )
        return
    arguments, explicit = config.model.get("init_args") or {}, cache(explicit or dict)
    for source, target, apply_on in getattr(parser, "links", []):
        attribute, argument = str(source).removeprefix("data."), target.removeprefix("model.init_args.")
        linked = apply_on == "instantiate" and source == f"data.{attribute}" and argument in arguments
        if not linked or hasattr(datamodule, attribute) or target in explicit():
            continue
        raise UsageError(
            f"{type(datamodule).__name__} names no {attribute}, which {name}'s {argument} is taken from: give"
            f" --model.init_args.{argument}, or a {attribute} attribute on the DataModule"
        )
