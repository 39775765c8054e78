"""Every private API of the libraries under this one that it relies on, in one place. For each: what it reaches, why
no public API does the job, and the versions it was checked on (Lightning 2.6.6, jsonargparse 4.53, mlflow 3.17,
wandb 0.31, Python 3.11). tests/test_private_apis.py has one test per item and fails when the library under it
changes behaviour. The rest of the library calls the functions below, never the private names themselves.

Kept in the subclasses that override them, as an override cannot go through a wrapper (loggers/,
checkpoints/);
each is in tests/test_private_apis.py too:
- CSVLogger: the writer's `_check_log_dir_exists` hook (it deletes an existing metrics.csv), its `_fs`, and the
  logger's cached `_experiment`;
- MLFlowLogger: `_tracking_uri`, `_run_id`, `_initialized`, `_experiment_name`, `_artifact_location` and
  `_mlflow_client`, set before its client is built (it builds one, opening the store, in `__init__`);
- WandbLogger: the `_wandb_init` arguments of `wandb.init` (the run id to continue) and the cached `_experiment`;
- `lightning.fabric.utilities.logger._convert_params` and `_flatten_dict`, to name the parameters MLFlowLogger logs
  and the HPARAMS entry holds (parameters.py) as Lightning names them, and `_MLFLOW_AVAILABLE` / `_WANDB_AVAILABLE`;
- ModelCheckpoint's `state_dict` layout (`dirpath`, `best_model_path`, `best_k_models`, ...), which RunCheckpoint
  respells before Lightning compares it, and its `current_score`, saved but not loaded by Lightning.
- a checkpoint's `loops.fit_loop.state_dict.combined_loader` (the training loaders' saved states, in the order of
  their stateful ones), which FSDP (parallel/sharding.py) hands to the loaders itself: Lightning restores a
  ModelParallelStrategy's checkpoint after the loaders exist, and never applies it.
- the file name of a sharded checkpoint's part that is not sharded, `meta.pt` (`lightning.fabric.utilities.load.
  _METADATA_FILENAME`), which checkpoints/sharded.py writes and Lightning's ModelParallelStrategy reads on resume;
  named in folders/layout.py, as a constant can be no wrapper.
- argparse's HelpFormatter methods `_get_help_string` (the text after an option: jsonargparse's `(type: ..., default:
  ..., known subclasses: ...)`), `add_usage` and `_fill_text`, which RunsHelpFormatter overrides (help.py): argparse
  documents only the formatter classes' names, and jsonargparse no setting for the subclasses it lists.

Not APIs, matched where they are used: the wording of jsonargparse's errors (parser.py) and of the Lightning warnings
silenced in console.py; the template's tests of bad input and of the terminal fail when it changes. And that a fit
looks `train_dataloader` up on the DataModule (or module) instance after it restores the callbacks and before it draws
a batch, which RandomState's restore of the loaders' generators relies on (checkpoints/callbacks.py); the library's
tests/test_loader_generators.py fails when it changes.
"""

import argparse
import ast
import contextlib
import signal
from collections.abc import Callable, Iterator

# LightningCLI's record, in a module's saved hyper_parameters, of how it built the module: the function that
# rebuilds it, and the class of one chosen by class path (--data). Written by lightning.pytorch.cli._InstantiatorFn,
# read back by Lightning's load_from_checkpoint only; it has no public reader. Lightning 2.6.6.
INSTANTIATOR_KEY = "_instantiator"
CLASS_PATH_KEY = "_class_path"
# Where Lightning's rank_zero_info writes (lightning_utilities' `rank_zero_module.log`, set as each package is
# imported). A logging.Filter sees only the records of the logger it is added to, never those propagated from a
# child, and Lightning documents no logger for these lines. Lightning 2.6.6.
RANK_ZERO_LOGGERS = ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero")


def saved_class_path(hparams) -> str | None:
    """The class a module's saved hyper_parameters were built as (a DataModule's, and a LightningModule's under
    `subclass_mode_model`), or None."""
    return hparams.get(CLASS_PATH_KEY) if isinstance(hparams, dict) else None


def saved_arguments(hparams: dict) -> dict:
    """The saved `__init__` arguments, without LightningCLI's own keys (they start with an underscore)."""
    return {key: value for key, value in hparams.items() if not key.startswith("_")}


def lightning_modules_traceable():
    """A context in which a LightningModule outside a Trainer answers `trainer` with None instead of raising:
    torch.jit.trace reads each attribute of the module it traces. Lightning's own `to_torchscript` (deprecated in 2.7)
    and TensorBoardLogger's `log_graph` set the private class flag `_jit_is_scripting` so; no public switch exists.
    Lightning 2.6.6."""
    from lightning.pytorch.core.module import _jit_is_scripting  # here: `import lightning_runs` stays without Lightning

    return _jit_is_scripting()


def saved_monitors(checkpoint: dict) -> list[tuple[str | None, str | None]]:
    """(monitor, mode) of each ModelCheckpoint whose state the checkpoint holds, in their order.

    Lightning files a callback's state under its `state_key`; ModelCheckpoint's is its class name and a repr of a dict
    of its settings (`BestCheckpoint{'monitor': 'val/loss', 'mode': 'min', 'every_n_train_steps': 0, ...}`, made by
    Callback._generate_state_key). The state itself keeps the monitor but not the mode, and nothing public reads a
    state key back. Lightning 2.6.6.
    """
    found = []
    for key in checkpoint.get("callbacks", {}):
        settings = _state_key_settings(key)
        # EarlyStopping's key holds a monitor and a mode too; only a ModelCheckpoint's has its saving interval.
        if settings is not None and "every_n_epochs" in settings:
            found.append((settings.get("monitor"), settings.get("mode")))
    return found


def early_stopping_states(checkpoint: dict) -> list[dict]:
    """The saved states of the checkpoint's EarlyStopping callbacks (filed under `EarlyStopping{'monitor': ...}`: see
    saved_monitors; subclasses under their own names, which are not found). Lightning 2.6.6."""
    return [state for _, state in _early_stopping_items(checkpoint)]


def saved_early_stopping_monitors(checkpoint: dict) -> list[tuple[str | None, str | None]]:
    """(monitor, mode) of each EarlyStopping whose state the checkpoint holds, read from its state key (see
    saved_monitors): Lightning restores a state only into a callback of the same key. Lightning 2.6.6."""
    settings = (_state_key_settings(key) or {} for key, _ in _early_stopping_items(checkpoint))
    return [(found.get("monitor"), found.get("mode")) for found in settings]


def _early_stopping_items(checkpoint: dict) -> list[tuple[str, dict]]:
    from lightning.pytorch.callbacks import EarlyStopping  # here: `import lightning_runs` stays without Lightning

    prefix = f"{EarlyStopping.__qualname__}{{"
    callbacks = checkpoint.get("callbacks", {}).items()
    return [(str(k), s) for k, s in callbacks if str(k).startswith(prefix) and isinstance(s, dict)]


def _state_key_settings(key) -> dict | None:
    _, brace, settings = str(key).partition("{")
    try:
        settings = ast.literal_eval(brace + settings) if brace else None
    except (ValueError, SyntaxError):  # a setting without a literal repr (train_time_interval, a timedelta)
        return None
    return settings if isinstance(settings, dict) else None


def epochs_processed(checkpoint: dict) -> int:
    """Training epochs the saved run finished, validation and all. The checkpoint's `epoch` is the index of the epoch
    it was saved in, the same for a save at that epoch's end and one in its middle; only the fit loop's progress
    counter (`loops.fit_loop.epoch_progress`, an undocumented layout) tells them apart. Lightning 2.6.6."""
    progress = checkpoint.get("loops", {}).get("fit_loop", {}).get("epoch_progress", {})
    return progress.get("current", {}).get("processed", 0)


def steps_between_saves(callback) -> int:
    """A ModelCheckpoint's `every_n_train_steps` (0: it saves on no step interval). Kept only as the private
    `_every_n_train_steps`, with no public reader. Lightning 2.6.6."""
    return callback._every_n_train_steps


def save_now(callback, trainer) -> None:
    """Has a ModelCheckpoint save as its own triggers do (its file, its state, its `save_last` copy), unless it
    already saved at this step or the run saves nothing (sanity check, fast_dev_run, not fitting). Lightning's
    triggers are fixed at `__init__` (steps, epochs and time mutually exclusive) and the methods they call are private
    (`_should_skip_saving_checkpoint`, `_monitor_candidates`, `_save_topk_checkpoint`, `_save_last_checkpoint`).
    Lightning 2.6.6."""
    if not callback._should_skip_saving_checkpoint(trainer):
        candidates = callback._monitor_candidates(trainer)
        callback._save_topk_checkpoint(trainer, candidates)
        callback._save_last_checkpoint(trainer, candidates)


@contextlib.contextmanager
def value_imports_judged(judge: Callable[[str], None]) -> Iterator[None]:
    """Within: `judge(path)` runs before jsonargparse imports a dotted path that a parsed value names (a class_path, a
    callable, a type, from a config file or the command line; never one from code: an annotation, a default), and
    refuses it by raising ImportError. That is where jsonargparse checks its import path denylist
    (`check_import_path`, bound by name in `_util` and `_typehints`); its public settings take fixed lists only,
    process-wide, and the check before them cannot read a module's source (class_paths.py). jsonargparse 4.53."""
    from jsonargparse import _typehints, _util  # here: `import lightning_runs` stays without jsonargparse's internals

    original = _util.check_import_path

    def judged(path: str) -> None:
        judge(path)
        original(path)

    _util.check_import_path = _typehints.check_import_path = judged
    try:
        yield
    finally:
        _util.check_import_path = _typehints.check_import_path = original


def signal_launched_ranks(launcher, signum: signal.Signals) -> None:
    """Sends `signum` to the ranks Lightning's own launcher started (they do not see a signal sent to this process).
    `trainer.strategy.launcher` is public, but its type and `kill` are the private `_Launcher`'s; Lightning's own
    SIGTERM handling calls the same. None: a launcher that started nothing (torchrun, SLURM). Lightning 2.6.6."""
    if launcher is not None and hasattr(launcher, "kill"):
        launcher.kill(signum)


def tensorboard_file_writer(writer):
    """The event file writer of a torch SummaryWriter (`TensorBoardLogger.experiment`), to write a summary built by
    TensorBoard's own hparams API: SummaryWriter has no public method taking a ready summary (its add_hparams
    writes booleans as numbers and opens a sub-run). Lightning's TensorBoardLogger calls the same. torch 2.14."""
    return writer._get_file_writer()


def trial_id(trial) -> int:
    """An Optuna trial's id in its storage, which `optuna.trial.Trial(study, trial_id)` takes to rebuild the trial in
    another process (a sweep's trial runs as its own fit). Optuna has no public accessor; its own callbacks
    (RetryFailedTrialCallback, the integrations) read `_trial_id` so. Optuna 4.x."""
    return trial._trial_id


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string the parser accepts (`--trainer.max_epochs`, ...), for the closest match to a misspelt one.
    argparse keeps them in `_option_string_actions` and has no public listing (jsonargparse reads its `_actions` too).
    Python 3.11; argparse has kept it since 3.2."""
    return list(parser._option_string_actions)


def option_nargs(parser: argparse.ArgumentParser) -> dict[str, int | str | None]:
    """Each option string with the values it takes (its action's `nargs`: 0 for a flag), for shell completion; from
    the same private `_option_string_actions` as option_strings."""
    return {option: action.nargs for option, action in parser._option_string_actions.items()}


def add_configure_optimizers(cli, subcommand: str) -> None:
    """LightningCLI's `--optimizer` / `--lr_scheduler` (the model's `configure_optimizers` replaced by the ones given),
    for a model RunsCLI builds itself, in its own order (cli.py): LightningCLI.instantiate_classes calls the private
    `_add_configure_optimizers_method_to_model`, and no public method does the same. Lightning 2.6.6."""
    cli._add_configure_optimizers_method_to_model(subcommand)


def subcommand_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of one subcommand (`fit`) of a jsonargparse parser with subcommands. jsonargparse keeps them in the
    private `_subcommands_action` (argparse's own `_name_parser_map`), and LightningCLI in its private
    `_subcommand_parsers`. jsonargparse 4.53."""
    return parser._subcommands_action._name_parser_map[name]


def typed_options(parser: argparse.ArgumentParser) -> list[tuple[str, object, object, str | None, bool]]:
    """(key, type hint, default, help, group) of each key a config file of this parser may hold, in the parser's
    order: the options jsonargparse parses with a type hint (`--trainer.max_epochs`: Optional[int]), its yes/no flags
    (`--quiet`: bool), and each group's own key (`--trainer CONFIG`: a sub-config file or the group's values, `group`
    True). Not the targets of links (a value there is dropped), help and print options. jsonargparse keeps the type
    of an option in the private `ActionTypeHint._typehint`, and argparse the options in `_actions`. jsonargparse 4.53.
    """
    from jsonargparse import ActionYesNo  # here: `import lightning_runs` stays without jsonargparse's internals
    from jsonargparse._actions import _ActionConfigLoad
    from jsonargparse._typehints import ActionTypeHint

    options = []
    for action in parser._actions:
        if isinstance(action, _ActionConfigLoad):
            options.append((action.dest, None, None, None, True))
        elif isinstance(action, ActionTypeHint):
            options.append((action.dest, action._typehint, action.default, action.help, False))
        elif isinstance(action, ActionYesNo):
            options.append((action.dest, bool, action.default, action.help, False))
    return options
