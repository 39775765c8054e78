"""What a command's arguments say before they are parsed, read as text with nothing imported: the keys typed
(`model.lr`), the class each group chooses, and a checkpoint's own classes put first for `--ckpt_path <file>`."""

import json
from pathlib import Path

from lightning_runs.checkpoints.class_paths import names_class
from lightning_runs.checkpoints.loading import load_plain
from lightning_runs.checkpoints.sharded import is_checkpoint
from lightning_runs.folders.layout import classes_of_run
from lightning_runs.folders.recipes import config_file
from lightning_runs.private import saved_arguments, saved_class_path

SUBCOMMANDS = ("fit", "validate", "test", "predict")


def keys_given(args: list[str]) -> set[str]:
    """`model.lr` for `--model.lr 0.1` or `--model.lr=0.1`; `model.network` for `--model.network.dropout`;
    `data.class_path` for `--data my_data.MyDataModule`; `trainer.max_epochs` for `--trainer.max_epochs 4`;
    `model.class_path` for `--model my_exp.Regressor`; `checkpoint.monitor` for `--checkpoint.monitor val/f1`,
    `early_stopping.monitor` likewise."""
    keys = set()
    for arg in args:
        if arg.startswith(("--model.", "--data.", "--trainer.", "--checkpoint.", "--early_stopping.")):
            group, key = arg[2:].split("=")[0].split(".")[:2]
            keys.add(f"{group}.{key}")
        elif arg.split("=")[0] in ("--data", "--model"):
            keys.add(f"{arg.split('=')[0][2:]}.class_path")
    return keys


def chosen_class_path(args: list[str], group: str, default: str) -> str:
    """The class `args` choose for `group` (`model`, `data`), as the parser will read them: the last of `--model X`,
    `--model=X`, `--model '{"class_path": X, ...}'` and the `model` of each `--config` file, in their order; else
    `default`. Read as text, nothing imported."""
    chosen = default
    for i, arg in enumerate(args):
        value = None
        if arg in (f"--{group}", f"--{group}.class_path", "--config") and i + 1 < len(args):
            value = args[i + 1] if arg != "--config" else _config_section(args[i + 1], group)
        elif arg.startswith((f"--{group}=", f"--{group}.class_path=", "--config=")):
            value = arg.split("=", 1)[1] if not arg.startswith("--config=") else _config_section(arg[9:], group)
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                value = json.loads(value)
            except ValueError:
                value = None
        if isinstance(value, dict):
            value = value.get("class_path")
        if isinstance(value, str) and value:
            chosen = value
    return chosen


def _config_section(path: str, group: str):
    loaded = config_file(path)
    return loaded.get(group) if isinstance(loaded, dict) else None


def with_checkpoint_classes(args: list[str], default_model: str, default_data: str) -> list[str]:
    """`args` with the checkpoint's model and DataModule first, where `--ckpt_path` names a file: `test --ckpt_path
        <file>` alone rebuilds the module it saved, whatever its class (LightningCLI saves it as `_class_path` for a
        model chosen by class path), unless a `--model` class is typed. Its DataModule comes first where it is not the
        default, `--data.<argument>` options are given and no `--data` class is: they are then read against that class's
        signature (`--data.path` of a file's checkpoint), not the default's, and win over the checkpoint's values as
        typed. A module that saves no hyperparameters (Lightning's BoringModel) names no class: its run's config.yaml
    does. A `--config` that names a class still wins (it comes later), and resume.reconcile says what then differs.
        `last`/`best` are found by the options given, so they keep the defaults. A class path that is no class is left
        for read_checkpoint to refuse, with its reason; nothing is imported here."""
    path = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--ckpt_path"), None)
    path = path or next((arg.split("=", 1)[1] for arg in args if arg.startswith("--ckpt_path=")), None)
    if path is None or not is_checkpoint(Path(path)):
        return args
    try:
        checkpoint = load_plain(Path(path))
        saved = {"model": checkpoint.get("hyper_parameters"), "data": checkpoint.get("datamodule_hyper_parameters")}
    except Exception:  # not a readable checkpoint: read_checkpoint says so in one line, later
        return args
    first, from_run = [], classes_of_run(Path(path))
    for group, default in (("model", default_model), ("data", default_data)):
        if any(arg == f"--{group}" or arg.startswith(f"--{group}=") for arg in args):
            continue  # a class typed: the checkpoint's is compared with it (reconcile)
        saved_class = saved_class_path(saved[group])
        if isinstance(saved_class, str):
            if group == "data" and not any(arg.startswith("--data.") for arg in args):
                continue  # the data's class and arguments are adopted after parsing (reconcile)
            section = {"class_path": saved_class, "init_args": saved_arguments(saved[group])}
        elif saved[group] is None and group in from_run:  # it saved no hyperparameters: its run's config says
            section = from_run[group]
        else:
            continue
        if section["class_path"] == default or names_class(section["class_path"]) is not True:
            continue
        first.append(f"--{group}={json.dumps(section, default=str)}")
    at = next((i + 1 for i, arg in enumerate(args) if arg in SUBCOMMANDS), None)  # right after the subcommand
    return args if at is None or not first else [*args[:at], *first, *args[at:]]
