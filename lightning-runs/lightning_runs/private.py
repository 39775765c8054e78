"""Every private API of the libraries under this one that it relies on, in one place: what it reaches, why no public
API does it, the versions it was checked on (Lightning 2.6.6, jsonargparse 4.53, torch 2.14, Optuna 5.1). The rest of
the library calls these functions, never the private names; tests/test_private_apis.py has one test per item.

Also relied on, where no wrapper can stand (each in tests/test_private_apis.py):
- the subclasses that override private state: CSVLogger's `_check_log_dir_exists`, `_fs` and `_experiment`
  (loggers/csv_run_logger.py); MLFlowLogger's `_tracking_uri`, `_run_id`, `_initialized`, `_experiment_name`,
  `_artifact_location`, `_mlflow_client`, and WandbLogger's `_wandb_init`, `_experiment` (loggers/trackers.py);
  ModelCheckpoint's `state_dict` keys, `current_score` and `_find_last_checkpoints`, which `fit(ckpt_path="last")`
  calls before set-up (checkpoints/last_checkpoint.py);
- `lightning.fabric.utilities.logger._convert_params` / `_flatten_dict` (loggers/run_folder.py, records/hparams.py);
- the fit loop's `epoch_progress.current.processed/completed` between an epoch's last batch and its scheduler step
  (checkpoints/last_checkpoint.py: schedulers_after_epoch);
- the fit loop's `on_save_checkpoint()["combined_loader"]`, its loaders' states (checkpoints/random_state.py), and
  `meta.pt` as Lightning's name for a sharded checkpoint's unsharded part (checkpoints/sharded.py);
- that a fit looks `train_dataloader` and the module's `on_train_start` up on the instance after restoring callbacks,
  and builds the training iterator before `on_train_start` (checkpoints/random_state.py).
"""

import logging
import signal
from collections.abc import Generator
from contextlib import contextmanager


def steps_between_saves(callback) -> int:
    """A ModelCheckpoint's `every_n_train_steps`, kept only as `_every_n_train_steps`."""
    return callback._every_n_train_steps


def save_now(callback, trainer) -> None:
    """Has a ModelCheckpoint save as its own triggers do, unless it already saved at this step (its triggers are fixed
    at `__init__` and the methods they call are private)."""
    if not callback._should_skip_saving_checkpoint(trainer):
        candidates = callback._monitor_candidates(trainer)
        callback._save_topk_checkpoint(trainer, candidates)
        callback._save_last_checkpoint(trainer, candidates)


def call_epoch_start_hooks(trainer) -> None:
    """Calls the callbacks' and the module's `on_train_epoch_start` as the fit loop does (its private `call` helpers
    also name the hook for `self.log` and the profiler): Lightning 2.6 skips them on a restart inside an epoch."""
    from lightning.pytorch.trainer import call

    call._call_callback_hooks(trainer, "on_train_epoch_start")
    call._call_lightning_module_hook(trainer, "on_train_epoch_start")


def skip_batches(trainer, count: int) -> None:
    """Advances the fit's training iterator past `count` batches, counting none (the epoch loop adds those it restored):
    a restart inside an epoch over a loader that cannot resume its position continues where the epoch stopped. The
    fetcher and its iterator are the fit loop's private `_data_fetcher.iterator`; a prefetched batch is the first."""
    fetcher = trainer.fit_loop._data_fetcher
    prefetched = getattr(fetcher, "batches", None) or []  # only a loader of unknown length prefetches
    for _ in range(count - len(prefetched)):
        next(fetcher.iterator)
    fetcher.batches = [*prefetched[count:], *(next(fetcher.iterator) for _ in prefetched[:count])]


def datamodules_described_plainly():
    """A context in which LightningDataModule's `str()` is object's: Lightning's calls every loader method to describe
    them (building datasets, drawing from the global RNG: a first run, before its data existed, then drew other samples
    than the next), and jsonargparse formats one into a debug line, eagerly, whenever a link's source attribute is
    missing (no sample_shape). The standard library's patch puts it back (torch and Lightning import it already)."""
    from unittest import mock

    from lightning.pytorch import LightningDataModule

    return mock.patch.object(LightningDataModule, "__str__", object.__str__)


def unnumbered_logger(trainer):
    """The trainer's first logger where it numbers its own `version_N` folders (TensorBoardLogger, CSVLogger) and has
    not chosen the next yet: their private `_version` is None until `version` is read."""
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    logger = trainer.loggers[0] if trainer.loggers else None
    numbered = isinstance(logger, TensorBoardLogger | CSVLogger) and logger._version is None
    return logger if numbered else None


def continue_version(logger, version: int) -> None:
    """Has such a logger write into `version_<version>` (its `version` argument, given after construction)."""
    logger._version = version


def signal_launched_ranks(launcher, signum: signal.Signals) -> None:
    """Sends `signum` to the ranks Lightning's own launcher started (they do not see a signal sent to this process);
    `kill` is the private `_Launcher`'s, which Lightning's own SIGTERM handling calls."""
    if launcher is not None and hasattr(launcher, "kill"):
        launcher.kill(signum)


def tensorboard_file_writer(writer):
    """A torch SummaryWriter's event file writer, to write a summary built by TensorBoard's hparams API (SummaryWriter
    has no public method taking one; Lightning's TensorBoardLogger calls the same)."""
    return writer._get_file_writer()


def lightning_modules_traceable():
    """A context in which a LightningModule outside a Trainer answers `trainer` with None instead of raising, as
    torch.jit.trace reads every attribute (Lightning's own `to_torchscript` sets `_jit_is_scripting` so)."""
    from lightning.pytorch.core.module import _jit_is_scripting

    return _jit_is_scripting()


def trial_id(trial) -> int:
    """An Optuna trial's storage id, which `optuna.trial.Trial(study, trial_id)` takes in another process (Optuna's own
    callbacks read `_trial_id` so)."""
    return trial._trial_id


def subcommand_parser(parser, name: str):
    """One subcommand's parser of a jsonargparse parser (argparse's `_name_parser_map`)."""
    return parser._subcommands_action._name_parser_map[name]


def load_loader_states(trainer, states: list | None = None, again: bool = False) -> None:
    """Hands the training loaders `states` (each loader's `state_dict()`, as the fit loop saves them; None: the ones a
    resume's checkpoint left pending; []: none) and makes the epoch's iterator again from them, the epoch set first.
    Lightning makes the iterator in `setup_data`, before it sets the epoch (`_set_sampler_epoch`): a DistributedSampler
    shuffles by its epoch as the iterator is made, so a resume inside epoch k continued epoch 0's order. And a module
    reading `trainer.estimated_stepping_batches` in `configure_optimizers` built the loaders before the checkpoint was
    read, so their states stayed pending. The fit loop's `_load_combined_loader_states`, `_combined_loader` and
    `_data_fetcher` (Lightning 2.6.6)."""
    from lightning.fabric.utilities.data import _set_sampler_epoch

    loop = trainer.fit_loop
    loop._combined_loader_states_to_load = loop._combined_loader_states_to_load if states is None else states
    pending = loop.restarting and loop._combined_loader_states_to_load
    if (pending or again) and loop._combined_loader is not None:  # `again`: the iterator made again all the same
        for loader in loop._combined_loader.flattened:
            _set_sampler_epoch(loader, loop.epoch_progress.current.processed)
        if pending:
            loop._load_combined_loader_states()
        iter(loop._data_fetcher)


def continue_persistent_workers(trainer) -> bool:
    """Hands each training loader whose workers persist (`persistent_workers`) the state the fit loop left pending (it
    loads none from an epoch's end) and makes its iterator from it, at that epoch's end, then the next epoch's: the
    workers start from their saved states. True where a loader did. The fit loop's `_combined_loader_states_to_load`,
    `_combined_loader` and `_data_fetcher` (Lightning 2.6.6)."""
    from lightning.fabric.utilities.data import _set_sampler_epoch

    loop = trainer.fit_loop
    stateful = [loader for loader in loop._combined_loader.flattened if hasattr(loader, "load_state_dict")]
    states = loop._combined_loader_states_to_load
    matched = zip(stateful, states, strict=True) if len(states) == len(stateful) else []
    kept = [(loader, state) for loader, state in matched if getattr(loader, "persistent_workers", False)]
    for loader, state in kept:
        loader.load_state_dict(state)
        iter(loader)
        _set_sampler_epoch(loader, loop.epoch_progress.current.processed)  # the saved one's epoch was restored
    if kept:
        iter(loop._data_fetcher)
    return bool(kept)


def wrap_distributed_sampler(loader, wrap):
    """Where Lightning's DistributedSamplerWrapper wraps `loader`'s sampler (one other than torch's RandomSampler or
    SequentialSampler: torchdata's RandomSampler among them), the wrapped sampler replaced by `wrap(sampler, wrapper)`,
    which is returned; else None. The wrapper lists its private `dataset._sampler` again at every epoch's start: each
    epoch's order is drawn from that sampler's generator (Lightning 2.6.6)."""
    from lightning.fabric.utilities.distributed import DistributedSamplerWrapper

    for sampler in (getattr(loader, "sampler", None), getattr(getattr(loader, "batch_sampler", None), "sampler", None)):
        if isinstance(sampler, DistributedSamplerWrapper):
            sampler.dataset._sampler = wrap(sampler.dataset._sampler, sampler)
            return sampler.dataset._sampler
    return None


def given_options(parser, args: list[str]):
    """What `args` give (typed, or in a config file they name), no default among them: jsonargparse's
    `parse_args(defaults=False)` less its check that every required option is there (a `--model` left to its
    default class is missing from such a parse), which only the private `_skip_validation` skips. jsonargparse 4.53."""
    return parser.parse_args(args, defaults=False, _skip_validation=True)


def parsed_unchecked(parser, args: list[str]):
    """jsonargparse's parse less its validation of the whole config at the end (the private `_skip_validation`): each
    value is still checked as it is read. jsonargparse 4.53."""
    return parser.parse_args(args, _skip_validation=True)


def set_config_dump(cli, dumped: dict) -> None:
    """Gives LightningCLI the subcommand's config, dumped and loaded, that its modules' saved hyperparameters are read
    from (`config_dump`): its `_dump_config` dumps the whole config again only where none is set. Lightning 2.6.6."""
    cli.config_dump = dumped


def saved_class_path(hparams) -> str | None:
    """The class a module's saved hyper_parameters were built as: LightningCLI records a module chosen by class path
    under `_class_path` (lightning.pytorch.cli._InstantiatorFn) and has no public reader. Lightning 2.6.6."""
    return hparams.get("_class_path") if isinstance(hparams, dict) else None


def print_config_deferred():
    """A context in which jsonargparse's `--print_config` does not print at the end of each parse (its
    `_ActionPrintConfig.skip_print_config`): RunsCLI parses twice where a command chooses another class, or evaluates a
    run's checkpoint, and prints the final config once (`print_config_if_requested`). jsonargparse 4.53."""
    from jsonargparse._actions import _ActionPrintConfig

    return _ActionPrintConfig.skip_print_config()


def print_config_if_requested(parser, config) -> None:
    """Print the config and exit where `--print_config` was given (jsonargparse's `_ActionPrintConfig`)."""
    from jsonargparse._actions import _ActionPrintConfig

    _ActionPrintConfig.print_config_if_requested(parser, config)


@contextmanager
def guards_added() -> Generator[list, None, None]:
    """Yields a list that fills with (guard, frame) for each guard torch.export adds while tracing (`Eq(s0, 2)`: a size
    made a constant), the frame (traceback.FrameSummary, or None) the user's line that added it. Read from torch's own
    INFO record of it (symbolic_shapes' "[guard added]", whose SLoc argument holds the frame): no public API says which
    line of a forward fixed a dynamic size. torch 2.14."""
    logger, found = logging.getLogger("torch.fx.experimental.symbolic_shapes"), []

    class Guards(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "[guard added]" in str(record.msg) and isinstance(record.args, tuple) and len(record.args) >= 3:
                frame = getattr(record.args[2], "framework_loc", None)
                found.append((str(record.args[1]), frame if hasattr(frame, "lineno") else None))

    saved = logger.handlers, logger.level, logger.propagate
    logger.handlers, logger.propagate = [Guards()], False  # ty: ignore[invalid-assignment]  # torch's own handler would print them
    logger.setLevel(logging.INFO)
    try:
        yield found
    finally:
        logger.handlers, logger.propagate = saved[0], saved[2]
        logger.setLevel(saved[1])


def option_nargs(parser) -> dict:
    """Each option string a parser accepts with the values it takes (its action's `nargs`: 0 for a flag), for shell
    completion and a misspelt option's closest match; from argparse's private `_option_string_actions`."""
    return {option: action.nargs for option, action in parser._option_string_actions.items()}


def typed_options(parser) -> list[tuple[str, object, object, str | None, bool]]:
    """(key, type hint, default, help, group) of each key a config file of this parser may hold: jsonargparse keeps an
    option's type in the private `ActionTypeHint._typehint`, argparse the options in `_actions`. jsonargparse 4.53."""
    from jsonargparse import ActionYesNo
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
