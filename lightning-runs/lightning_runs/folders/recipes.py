"""Which run `--ckpt_path best|last` means: the newest run of the experiment folder whose `config.yaml` (the resolved
config its fit saved) holds the recipe this command describes, not merely the newest run under that name.

A recipe is what makes two fits the same run: the model and data sections and the seed (RECIPE), and the settings
that fix how long and how it trains (TRAINING). What only places or shows a run may differ: `--ckpt_path`, the
logger and its version, progress bars and verbosity, the devices (a GPU config moves the same recipe to other
hardware; a resume on another count of devices is refused by resume.py, which holds the step count).

A fit resumes only its own recipe, TRAINING included: "rerun the same command with --ckpt_path last". An evaluation
compares the TRAINING settings it is given (on the command line or in a config) and takes any otherwise, and the
data settings it is given say what it is evaluated on (resume.py), not which run it evaluates.
"""

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from lightning_runs.contract.names import DERIVED
from lightning_runs.errors import UsageError
from lightning_runs.folders.layout import runs_with_checkpoint, saved_config

RECIPE = ("seed_everything", "model", "data")
# Trainer settings that fix how long and how a run trains, and when it stops early.
TRAINING = (
    *(f"trainer.{key}" for key in (
        "max_epochs", "min_epochs", "max_steps", "min_steps", "max_time", "limit_train_batches", "limit_val_batches",
        "overfit_batches", "val_check_interval", "check_val_every_n_epoch", "accumulate_grad_batches",
        "gradient_clip_val", "gradient_clip_algorithm", "precision",
    )),
    "early_stopping",
)  # fmt: skip
SHOWN = 4  # candidates listed in a refusal, newest first; one line stays readable
DIFFERENCES_SHOWN = 2  # per candidate


@dataclass
class Candidate:
    folder: Path  # runs/<name>/version_N
    checkpoint: Path  # its checkpoints/<best|last>.ckpt
    differences: list[str] | None  # "model.lr 0.01, this command 0.003"; []: the same recipe; None: no config.yaml


def keys_in_configs(args: list[str]) -> set[str]:
    """The settings the `--config` files among `args` give, as command_line.keys_given names typed ones (`model.lr`,
    `data.batch_size`, `data.class_path`, `trainer.max_epochs`, `seed_everything`): a value from the user's own
    config is given as much as one typed, and a checkpoint must not silently replace it."""
    paths = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--config"]
    paths += [arg.split("=", 1)[1] for arg in args if arg.startswith("--config=")]
    keys = set()
    for path in paths:
        loaded = config_file(path)
        for group, section in (loaded or {}).items() if isinstance(loaded, dict) else ():
            if not isinstance(section, dict):
                keys.add(group)
                continue
            if group in ("model", "data") and "class_path" in section:
                keys.add(f"{group}.class_path")
                section = section.get("init_args") or {}
            keys |= {f"{group}.{key}" for key in section}
    return keys


def config_file(path: str):
    """A `--config` file's YAML as plain data, or None where it cannot be read (the parser refuses it, in its own
    words). Read as text: nothing it names is imported."""
    try:
        return yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None


def recipe(config: dict, subcommand: str, given: set[str]) -> dict:
    """The settings of `config` (a resolved config as a dict) that say which run it trains, flat: `model.lr`,
    `model.network.channels`, `data.batch_size` (the class path's `init_args` level left out), `trainer.max_epochs`."""
    flat = {key.replace(".init_args.", "."): value for key, value in flatten(config).items()}
    kept = [key for key in flat if _compared(key, subcommand, given)]
    return {key: _plain(flat[key]) for key in sorted(kept, key=lambda key: not _under(key, RECIPE))}  # model first


def recipe_hash(config: dict | None) -> str | None:
    """SHA-256 of a fit's recipe (`recipe(config, "fit", ...)`): summary.json's `config_hash`, the runs table's
    `config`. Equal hashes mean what `--ckpt_path last` means by the same run."""
    if config is None:
        return None
    return hashlib.sha256(json.dumps(recipe(config, "fit", set()), sort_keys=True).encode()).hexdigest()


def flatten(config: dict, prefix: str = "") -> dict:
    """A nested config as one level: `{"model": {"lr": 0.1}}` -> `{"model.lr": 0.1}`."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat |= flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _compared(key: str, subcommand: str, given: set[str]) -> bool:
    if key in DERIVED and key not in given:  # follows from the data, which is compared (contract/links.py)
        return False
    if subcommand != "fit" and _under(key, TRAINING):
        return _under(key, given)
    if subcommand != "fit" and _under(key, ("data",)):
        return "data.class_path" not in given and not _under(key, given)
    return _under(key, RECIPE + TRAINING)


def _under(key: str, prefixes) -> bool:
    """`key` is one of `prefixes` or lies inside one: `model.network.channels` under `model.network`."""
    return any(key == prefix or key.startswith(f"{prefix}.") for prefix in prefixes)


def differences(wanted: dict, saved: dict) -> list[str]:
    """Settings compared on both sides that differ: `model.lr 0.01, this command 0.003`. A setting one side lacks (a
    parameter added to the code since) does not tell the runs apart."""
    return [
        f"{key} {_shown(saved[key])}, this command {_shown(value)}"
        for key, value in wanted.items()
        if key in saved and saved[key] != value
    ]


def candidates(experiment: Path, name: str, wanted: dict, subcommand: str, given: set[str]) -> list[Candidate]:
    """Every run of `experiment` with a `<name>.ckpt`, newest (highest version) first."""
    found = []
    for folder, checkpoint in runs_with_checkpoint(experiment, name):
        saved = saved_config(folder / "config.yaml")
        differ = None if saved is None else differences(wanted, recipe(saved, subcommand, given))
        found.append(Candidate(folder, checkpoint, differ))
    return found


def choose(experiment: Path, name: str, config, subcommand: str, given: set[str]) -> Candidate | None:
    """The newest run of this recipe with a `<name>.ckpt`; None where there is no such file at all (a first fit with
    `--ckpt_path last`). Refuses in one line, listing the runs that have one, when none of them has this recipe."""
    wanted = recipe(config.as_dict(), subcommand, given)
    found = candidates(experiment, name, wanted, subcommand, given)
    chosen = next((candidate for candidate in found if candidate.differences == []), None)
    if chosen is not None or not found:
        return chosen
    listed = [f"{c.folder.name} ({'; '.join(_described(c))})" for c in found[:SHOWN]]
    listed += [f"{len(found) - SHOWN} more"] if len(found) > SHOWN else []
    instead = "drop --ckpt_path to start a new run" if subcommand == "fit" else "train this recipe first"
    raise UsageError(
        f"--ckpt_path {name}: no run of {experiment} has the recipe this command describes (its model, data, seed"
        f" and training settings); runs with a {name}.ckpt: {', '.join(listed)};"
        f" name one (--ckpt_path {found[0].checkpoint}) or {instead}"
    )


def _described(candidate: Candidate) -> list[str]:
    if candidate.differences is None:
        return ["no readable config.yaml"]
    more = len(candidate.differences) - DIFFERENCES_SHOWN
    return candidate.differences[:DIFFERENCES_SHOWN] + ([f"{more} more"] if more > 0 else [])


def _plain(value):
    """Config values (paths, tuples) and saved ones (YAML's strings and lists) in one comparable form."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return json.loads(json.dumps(value, default=str))


def _shown(value) -> str:
    return "null" if value is None else json.dumps(value) if not isinstance(value, str) else value
