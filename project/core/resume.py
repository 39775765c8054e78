"""Resuming and evaluating from a checkpoint: its model and data settings win over the config, loudly."""

import json
import sys

from jsonargparse import Namespace
from lightning.pytorch.utilities import rank_zero_only

from project.core.console import say
from project.core.errors import UsageError

# Data settings that may differ from the checkpoint's: they do not change which samples are in which split.
FREE_DATA_KEYS = {"batch_size", "predict_path", "_instantiator"}


def reconcile(subcommand: str, config, checkpoint: dict, given: set[str]) -> None:
    """The checkpoint's model and data settings win over the config (Lightning merges the model's after this).

    A resumed fit must continue the saved run, and evaluation must score the split the model was trained
    against. A setting typed on this command line that the checkpoint contradicts would otherwise be ignored
    silently: resuming refuses it, evaluation warns.
    """
    saved = {"model": checkpoint.get("hyper_parameters", {}), "data": checkpoint.get("datamodule_hyper_parameters", {})}
    conflicts, adopted = [], []
    _reconcile_data_class(config, saved["data"], given, conflicts, adopted)
    sections = {"model": config.model, "data": config.data.init_args}  # --data is a class path plus its arguments
    for group, values in saved.items():
        for key, value in values.items():
            if key.startswith("_") or key not in sections[group] or (group == "data" and key in FREE_DATA_KEYS):
                continue
            current = sections[group][key]
            if _plain(current) == _plain(value):
                continue
            if f"{group}.{key}" in given:
                conflicts.append(f"--{group}.{key} {_plain(current)} (checkpoint: {_plain(value)})")
            else:
                adopted.append(f"{group}.{key}={_plain(value)}")
            if group == "data":
                sections["data"][key] = value
    if conflicts and subcommand == "fit":
        raise UsageError(
            f"{'; '.join(conflicts)}: a resumed run keeps its checkpoint's settings;"
            " drop --ckpt_path to start a new run with these"
        )
    if conflicts and rank_zero_only.rank == 0:
        print(f"warning: ignoring {'; '.join(conflicts)}: the checkpoint's settings are used", file=sys.stderr)
    if adopted:
        say(f"Using the checkpoint's {', '.join(adopted)}")


def _reconcile_data_class(config, saved: dict, given: set[str], conflicts: list[str], adopted: list[str]) -> None:
    """A checkpoint trained on another DataModule (a FileDataModule, say) brings that class and its arguments."""
    saved_class = saved.get("_class_path")
    if saved_class is None or saved_class == config.data.class_path:
        return
    if "data.class_path" in given:
        conflicts.append(f"--data {config.data.class_path} (checkpoint: {saved_class})")
        return
    adopted.append(f"data={saved_class}")
    init_args = {key: value for key, value in saved.items() if not key.startswith("_")}
    init_args |= {key: config.data.init_args[key] for key in FREE_DATA_KEYS if key in config.data.init_args}
    config.data = Namespace(class_path=saved_class, init_args=Namespace(**init_args))


def keys_given(args: list[str]) -> set[str]:
    """`model.lr` for `--model.lr 0.1` or `--model.lr=0.1`; `model.network` for `--model.network.dropout`;
    `data.class_path` for `--data project.data.FileDataModule`."""
    keys = set()
    for arg in args:
        if arg.startswith(("--model.", "--data.")):
            group, key = arg[2:].split("=")[0].split(".")[:2]
            keys.add(f"{group}.{key}")
        elif arg.split("=")[0] == "--data":
            keys.add("data.class_path")
    return keys


def _plain(value):
    """Config values (namespaces, tuples, paths) and checkpoint values (dicts, lists) in one comparable form."""
    if hasattr(value, "as_dict"):
        value = value.as_dict()
    return json.loads(json.dumps(value, default=str))
