"""A run's config as a recipe: flat keys, the settings that say how a run is shown or started left out, and its hash.
One definition serves a resume (the run's config.yaml against the command's), summary.json's `config_hash` and the
runs table's `differs`; the test name of a watched metric, and a part's option name. Nothing here imports torch."""

import hashlib
import json
import re

# The settings that say what a run trains (flat names, flat() below): a resume must give them as its run did. Each
# ends in a dot, as a flat name with one added is matched (`trainer.` holds `trainer.max_epochs`, never `trainer_x`).
RECIPE = ("model.", "data.", "seed_everything.", "optimizer.", "lr_scheduler.", "trainer.", "early_stopping.")
RECIPE += ("best_checkpoint.", "init_from.", "freeze.")
# Within them, what changes how a command is shown, observed or where it writes, never what it trains (a callback
# added to watch a resumed run, a progress bar turned off).
UNCOMPARED = ("trainer.callbacks.", "trainer.logger.", "trainer.enable_progress_bar.", "trainer.enable_model_summary.")
UNCOMPARED += ("trainer.default_root_dir.",)
# Where a run computed, not what: an evaluation of its checkpoint runs where its own command says (one CPU process for
# a run of 8 GPUs under FSDP), not where the fit ran.
WHERE = ("accelerator", "devices", "num_nodes", "strategy", "plugins", "precision")


# A validation metric's test counterpart, by prefix only (`valid_loss` -> `test_loss`, never `testid_loss`).
TEST_NAMES = {"val/": "test/", "val_": "test_", "valid_": "test_"}


def test_metric(monitor: str | None) -> str | None:
    """`val/loss` -> `test/loss`; None for a metric that is not a validation one."""
    prefix = next((prefix for prefix in TEST_NAMES if (monitor or "").startswith(prefix)), None)
    return None if prefix is None else TEST_NAMES[prefix] + (monitor or "").removeprefix(prefix)


def option(name: str) -> str:
    """A part's option group, named as its class: BestCheckpoint -> best_checkpoint, EarlyStopping -> early_stopping."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def flat(config: dict, prefix: str = "") -> dict:
    """`{"model": {"init_args": {"lr": 0.1}}}` -> `{"model.lr": 0.1}`: the class-path wrapping is storage, no name."""
    found = {}
    for key, value in (config or {}).items():
        name = prefix if key == "init_args" else f"{prefix}{key}."
        if isinstance(value, dict) and value:
            found |= flat(value, name)
        else:
            found[name.rstrip(".")] = value
    return found


def recipe(config: dict) -> dict:
    """The settings that say what a run trains, flat, as plain JSON values."""
    # str.startswith with a tuple: one C call a key (the runs table reads summaries of 10^4 settings)
    kept = {k: v for k, v in flat(config).items() if f"{k}.".startswith(RECIPE) and not f"{k}.".startswith(UNCOMPARED)}
    return json.loads(json.dumps(kept, default=str, sort_keys=True))


def config_hash(config: dict | None) -> str | None:
    return None if config is None else hashlib.sha256(json.dumps(recipe(config), sort_keys=True).encode()).hexdigest()


def differences(saved: dict, command: dict, whose: str = "the run") -> list[str]:
    """`--model.lr 0.003 (the run: 0.01)` for each setting the two configs give differently."""
    a, b = recipe(saved), recipe(command)
    return [f"--{key} {_shown(b.get(key))} ({whose}: {_shown(a.get(key))})" for key in sorted(a.keys() | b.keys())
            if a.get(key) != b.get(key)]  # fmt: skip


def _shown(value) -> str:
    return "null" if value is None else value if isinstance(value, str) else json.dumps(value)
