"""Resuming and evaluating from a checkpoint: its model, data and schedule settings win over the config, loudly."""

import json
from pathlib import Path

from jsonargparse import Namespace
from lightning.pytorch.callbacks import Callback

from lightning_runs.checkpoints.loading import load_plain
from lightning_runs.checkpoints.sharded import is_checkpoint
from lightning_runs.checks.preflight import device_count
from lightning_runs.console import say
from lightning_runs.errors import UsageError
from lightning_runs.private import (
    early_stopping_states,
    epochs_processed,
    saved_arguments,
    saved_class_path,
    saved_early_stopping_monitors,
    saved_monitors,
)

# Trainer settings that fix how many optimizer steps a run takes, so its LR schedule: a resumed run keeps them.
SCHEDULE_KEYS = ("max_epochs", "max_steps", "accumulate_grad_batches", "limit_train_batches", "num_nodes", "devices")


class TrainingLength(Callback):
    """Writes into every checkpoint the Trainer settings that fix the run's step count (SCHEDULE_KEYS, with the
    number of devices as counted), for `reconcile` to hold a resumed run to them.

    Lightning restores the scheduler's saved length whatever the new settings say: extended with a larger
    --trainer.max_epochs, a finished run's LR climbed from min_lr back to 5.7e-3.
    """

    def setup(self, trainer, pl_module, stage: str) -> None:
        self._settings = {key: getattr(trainer, key) for key in SCHEDULE_KEYS if key != "devices"}
        self._settings["devices"] = trainer.num_devices

    def state_dict(self) -> dict:
        return dict(getattr(self, "_settings", {}))


def reconcile(subcommand: str, config, checkpoint: dict, given: set[str]) -> None:
    """The checkpoint's model and data settings win over the config (Lightning merges the model's after this), and
    for a resumed fit its schedule settings too.

    `given`: the settings typed on the command line or written in a --config file. A resumed fit must continue the
    saved run: a given setting that the checkpoint contradicts is refused. An evaluation scores the data the model
    was trained against unless told otherwise: a given data setting (`--data other.DataModule`, `--data.<argument>`)
    wins and is said; a given model setting cannot change the saved weights and is refused. A run that already
    finished is not resumed: it would do nothing.
    """
    resuming = subcommand == "fit"
    saved = {"model": checkpoint.get("hyper_parameters", {}), "data": checkpoint.get("datamodule_hyper_parameters", {})}
    conflicts, adopted = [], []
    for group in ("model", "data"):  # a class that takes no arguments (BoringDataModule) comes without init_args
        if config[group].get("init_args") is None:
            config[group].init_args = Namespace()
    _check_model_class(subcommand, config, saved["model"])
    _reconcile_data_class(subcommand, config, saved["data"], given, conflicts, adopted)
    _adopt_monitor(config, checkpoint, given, adopted)
    # --model and --data are each a class path plus its arguments
    sections = {"model": config.model.init_args, "data": config.data.init_args}
    if resuming:
        saved["trainer"] = checkpoint.get("callbacks", {}).get(TrainingLength().state_key, {})
        sections["trainer"] = config.trainer
    evaluated_on = []  # data settings typed for an evaluation, which win over the checkpoint's
    for group, values in saved.items():
        if group == "data" and config.data.class_path != (saved_class_path(saved["data"]) or config.data.class_path):
            continue  # evaluated on other data (--data): its own settings, none of the checkpoint's
        for key, value in saved_arguments(values).items():
            if key not in sections[group]:
                continue
            current = sections[group][key]
            if group == "trainer":
                current = _as_trainer_reads(key, current)
                if (current is None and key == "devices") or _same(current, value):
                    continue  # a count of devices only Lightning knows ("auto") is taken as the same
            elif _plain(current) == _plain(value):
                continue
            if f"{group}.{key}" in given and group == "data" and not resuming:
                if value is not None:  # the checkpoint had no value: nothing of it is overridden
                    evaluated_on.append(f"--data.{key} {_plain(current)} (checkpoint: {_plain(value)})")
                continue
            if f"{group}.{key}" in given:
                conflicts.append(f"--{group}.{key} {_plain(current)} (checkpoint: {_plain(value)})")
            else:
                adopted.append(f"{group}.{key}={_plain(value)}")
            if group in ("data", "trainer"):
                sections[group][key] = value
    if conflicts and resuming:
        raise UsageError(
            f"{'; '.join(conflicts)}: a resumed run keeps its checkpoint's settings (its LR schedule was fixed when it"
            " started); drop --ckpt_path to start a new run with these"
        )
    if conflicts:  # the weights were trained with the checkpoint's model settings: another value would be a lie
        raise UsageError(
            f"{'; '.join(conflicts)}: an evaluation uses the checkpoint's model as it was trained; drop these"
            " options, or give a checkpoint trained with them"
        )
    if adopted:
        say(f"Using the checkpoint's {', '.join(adopted)}")
    if evaluated_on:
        say(f"Evaluating with {'; '.join(evaluated_on)}, as given")
    if resuming:
        last = Path(config.ckpt_path).with_name("last.ckpt")  # the run's newest state, beside a best.ckpt
        newest = is_checkpoint(last) and not last.samefile(config.ckpt_path) and load_plain(last)
        if newest:  # a best.ckpt saved before the end of a finished run does not say it finished: its last does
            _refuse_finished(config, newest)
        if newest and newest.get("global_step", 0) > checkpoint.get("global_step", 0):
            raise UsageError(  # resuming would train those steps again, over the run's best and last checkpoints
                f"--ckpt_path {config.ckpt_path}: its run went on to step {newest['global_step']} ({last}); a fit"
                f" resumes a run where it stopped: --ckpt_path last (or {last}), or no --ckpt_path for a new run"
            )
        _refuse_finished(config, checkpoint)


def _refuse_finished(config, checkpoint: dict) -> None:
    """Resuming a run that ended (all its epochs or steps, or early stopping) would do nothing, and training it
    further with a larger --trainer.max_epochs would restart its LR schedule's old curve (see TrainingLength)."""
    epochs = epochs_processed(checkpoint)
    max_epochs, max_steps = config.trainer.max_epochs, config.trainer.max_steps
    stopped = [state.get("stopped_epoch", 0) for state in early_stopping_states(checkpoint)]
    if max_epochs is not None and epochs >= max_epochs:
        reason = f"all its {max_epochs} epochs"
    elif max_steps is not None and 0 < max_steps <= checkpoint.get("global_step", 0):
        reason = f"all its {max_steps} steps"
    elif any(stopped):
        reason = f"early stopping at epoch {max(stopped)}"
    else:
        return
    raise UsageError(
        f"--ckpt_path {config.ckpt_path}: its run already finished ({reason}), there is nothing to resume; to train"
        " longer, start a new run with a larger --trainer.max_epochs (a run's LR schedule is fixed when it starts)"
    )


def _reconcile_data_class(
    subcommand: str, config, saved: dict, given: set[str], conflicts: list[str], adopted: list[str]
) -> None:
    """A checkpoint trained on another DataModule (a FileDataModule, say) brings that class and its arguments, and the
    data arguments typed on this command line; `--data` given for an evaluation keeps the config's class: the
    checkpoint is evaluated on that data (refused by preflight.check_checkpoint_fits if its model does not fit)."""
    saved_class = saved_class_path(saved)
    if saved_class is None or saved_class == config.data.class_path:
        return
    if "data.class_path" in given:
        if subcommand == "fit":
            conflicts.append(f"--data {config.data.class_path} (checkpoint: {saved_class})")
        else:
            say(f"Evaluating on --data {config.data.class_path} (the checkpoint trained on {saved_class}), as given")
        return
    adopted.append(f"data={saved_class}")
    init_args = saved_arguments(saved)
    init_args |= {
        key.split(".")[1]: config.data.init_args[key.split(".")[1]]
        for key in given
        if key.startswith("data.") and key.split(".")[1] in config.data.init_args
    }
    config.data = Namespace(class_path=saved_class, init_args=Namespace(**init_args))


def _as_trainer_reads(key: str, value):
    """A Trainer setting as the Trainer reports it (what TrainingLength saved): the number of devices asked for, or
    None where only Lightning knows it ("auto", -1)."""
    if key == "limit_train_batches":  # as Lightning converts it: unset is all batches, 2.0 is two batches
        if value is None:
            return 1.0
        return int(value) if value > 1 and value % 1 == 0 else value
    if key != "devices":
        return value
    return device_count(value)


def _same(a, b) -> bool:
    """Equal, and of one type: `--trainer.limit_train_batches 1` is one batch, 1.0 all of them."""
    return a == b and type(a) is type(b)


def _plain(value):
    """Config values (namespaces, tuples, paths) and checkpoint values (dicts, lists) in one comparable form."""
    if hasattr(value, "as_dict"):
        value = value.as_dict()
    return json.loads(json.dumps(value, default=str))


def _check_model_class(subcommand: str, config, saved: dict) -> None:
    """The weights are those of the checkpoint's class: another `--model` is refused, for a resume as for an
    evaluation (a checkpoint saved before models were chosen by class path names none)."""
    saved_class = saved_class_path(saved)
    if saved_class is not None and saved_class != config.model.class_path:
        verb = "a resumed run continues" if subcommand == "fit" else "an evaluation uses"
        raise UsageError(
            f"--model {config.model.class_path}: the checkpoint {config.ckpt_path} holds a {saved_class}, and {verb}"
            " the checkpoint's model; drop --model (or give a checkpoint of that class)"
        )


def _adopt_monitor(config, checkpoint: dict, given: set[str], adopted: list[str]) -> None:
    """The metrics the run's best checkpoint was chosen on and early stopping watched, with their modes, unless typed:
    a test of a run that monitored val/loss reports test/loss (summary, HPARAMS), and a resume keeps choosing
    best.ckpt and stopping as it did (a run whose default monitor followed what the model logs, monitored.py, saved
    its callbacks' states under the metric it followed, which Lightning restores only into callbacks watching it).
    Read from the checkpoint itself, so a checkpoint copied out of its run folder still says it."""
    for group, saved in (("checkpoint", saved_monitors), ("early_stopping", saved_early_stopping_monitors)):
        section = config.get(group)
        if section is None or f"{group}.monitor" in given:
            continue
        monitor, mode = next(((m, mode) for m, mode in saved(checkpoint) if isinstance(m, str)), (None, None))
        if monitor is not None and (monitor, mode) != (section.monitor, section.mode):
            section.monitor = monitor
            section.mode = mode if f"{group}.mode" not in given and mode in ("min", "max") else section.mode
            adopted.append(f"{group}.monitor={monitor} ({section.mode})")
