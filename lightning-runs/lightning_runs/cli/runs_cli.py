"""RunsCLI: a LightningCLI whose every run has a folder of its own, resumes exactly, stops cleanly and says what it did.

A project hands it its LightningModule, its default DataModule (any other is chosen with `--data <class path>`) and
its recipe's trainer defaults; it adds the callbacks every run has, `--quiet` and `--test_best`, and the hooks below.
A project's own subclass links its data to its model and sets the callbacks' recipe defaults in
`add_arguments_to_parser` (after calling this one's), as LightningCLI's documentation does.
"""

import inspect
import os
import sys
from collections.abc import Sequence

import lightning as L
from jsonargparse import Namespace
from lightning.fabric.utilities.exceptions import MisconfigurationException
from lightning.pytorch.callbacks import Callback, TQDMProgressBar
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI

from lightning_runs.checkpoints.monitored import MonitoredMetrics, stated_early_stopping, stated_monitors
from lightning_runs.checkpoints.optimizer_states import OptimizerStates
from lightning_runs.checks import launchers, preflight
from lightning_runs.cli import placement
from lightning_runs.cli.bounded import bounded_tensors, check_config_files, config_sections
from lightning_runs.cli.command_line import chosen_class_path, keys_given, with_checkpoint_classes
from lightning_runs.cli.parser import ProjectParser
from lightning_runs.cli.references import check_class_paths, chosen_class, imports_judged
from lightning_runs.cli.run_options import (
    PROGRESS_BAR_REFRESH_RATE,
    TRAINER_DEFAULTS,
    add_run_options,
    adds_default_progress_bar,
)
from lightning_runs.console import apply_quiet, library_noise_silenced, program, set_program
from lightning_runs.contract.links import link_data_to_model, placeholders
from lightning_runs.errors import Terminated, UsageError
from lightning_runs.faults.signals import sigterm_held, terminated_line, terminated_outside_training
from lightning_runs.folders.files import check_run_files
from lightning_runs.folders.layout import deletion_said
from lightning_runs.folders.recipes import keys_in_configs
from lightning_runs.loggers.configured import open_before_run
from lightning_runs.private import add_configure_optimizers, subcommand_parser
from lightning_runs.records.provenance import SaveConfigInRun
from lightning_runs.records.report import report_fit
from lightning_runs.sweeps.trial import callbacks_from_environment


def tools_help() -> str:
    return (
        f"tools, each with its own --help: {program()} export (a checkpoint for serving), runs (a line per run),"
        " sweep (an Optuna search), seeds (a config over several seeds), schema (the configs' JSON Schema, for"
        " editors), completion (a shell's tab completion)"
    )


def class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class RunsCLI(LightningCLI):
    """`RunsCLI(model_class, datamodule_class, trainer_defaults=..., callbacks=..., args=...)`.

    `datamodule_class` is the default of `--data`, which takes any LightningDataModule (contract/parts.py);
    `trainer_defaults` are the project's, over this library's (TRAINER_DEFAULTS); `callbacks`: objects a config
    cannot build, added to every Trainer (the sweep's pruning callback). Raises the typed errors of
    lightning_runs.errors; `errors.main()` turns them into exit codes.
    """

    def __init__(
        self,
        model_class: type[L.LightningModule],
        datamodule_class: type[L.LightningDataModule],
        trainer_defaults: dict | None = None,
        callbacks: Sequence[Callback] = (),
        args: list[str] | None = None,
        **kwargs,
    ) -> None:
        self.default_model, self.default_data = class_path(model_class), class_path(datamodule_class)
        # Left out of run names: a run of the model's default network is named for its data alone.
        network = inspect.signature(model_class).parameters.get("network")
        default = None if network is None else network.default
        self.default_network = class_path(default) if isinstance(default, type) else None
        self._claimed = None  # the run folder, once before_instantiate_classes claims it
        set_program(model_class)  # for a cli_main called without lightning_runs.main (a test, a notebook)
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # tensorboard's optional TensorFlow import is noisy
        # The callbacks are appended to those of the config; MonitoredMetrics checks the names the others watch,
        # OptimizerStates a resumed optimizer state, and a sweep's trial adds the one that reports to its study.
        self._monitored = MonitoredMetrics()
        added = [self._monitored, OptimizerStates(), *callbacks, *callbacks_from_environment()]
        defaults = {**TRAINER_DEFAULTS, **(trainer_defaults or {}), "callbacks": added}
        # `usage: python -m my_exp fit ...` rather than `__main__.py`; the subcommands' usage lines follow the main one.
        kwargs.setdefault("parser_kwargs", {}).setdefault("epilog", tools_help())
        kwargs["parser_kwargs"].setdefault("prog", program())
        self._testing_best = None  # the best checkpoint while --test_best tests it
        self._args = list(sys.argv[1:] if args is None else args)  # read by subcommands(), before any parse
        self._given: set[str] = set()  # the settings typed or in a --config file, once parsed
        refused = False
        # imports_judged: a dotted value (parsed, then adapted again as classes are built) is imported only once its
        # module is seen to define it.
        with library_noise_silenced(), terminated_outside_training(), imports_judged():
            try:
                with deletion_said(lambda: self._claimed):  # claimed in before_instantiate_classes
                    super().__init__(
                        L.LightningModule,  # any LightningModule, chosen with --model (a class path)
                        L.LightningDataModule,  # any DataModule, chosen with --data (a class path)
                        subclass_mode_model=True,
                        subclass_mode_data=True,
                        seed_everything_default=0,
                        trainer_defaults=defaults,
                        parser_class=ProjectParser,
                        save_config_callback=SaveConfigInRun,  # into any logger's run folder (Lightning #19441)
                        args=args,
                        **kwargs,
                    )
            except Terminated:  # said with what it stopped: the subcommand is known by now, if it got that far
                trainer = getattr(self, "trainer", None)
                raise Terminated(
                    terminated_line(getattr(self, "subcommand", None), trainer, self._testing_best)
                ) from None
            except UsageError:  # a refusal leaves no run folder, even one the command had begun to write
                refused = True
                raise
            finally:  # LightningCLI runs the subcommand inside __init__: it ends here, however it ends
                placement.release_run_folder(self._claimed, refused)

    def subcommands(self) -> dict[str, set[str]]:
        """Only the subcommand the command line starts with, where it starts with one: each subcommand's parser is
        most of what a command spends before it runs (a refused option: 0.65 s with one, 1.45 s with all four, 2 busy
        cores), and only one of them is used.
        `python -m <package> --help`, or anything else first, gets all of them."""
        every = LightningCLI.subcommands()
        first = self._args[0] if self._args else None
        return {first: every[first]} if first in every else every

    def init_parser(self, **kwargs) -> ProjectParser:
        parser = super().init_parser(**kwargs)
        parser.concise = True  # the main and the subcommand parsers: their errors are the ones users read
        parser.class_defaults = {"model": self.default_model, "data": self.default_data}
        return parser

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.set_defaults({"model": {"class_path": self.default_model}, "data": {"class_path": self.default_data}})
        add_run_options(parser)

    def parse_arguments(self, parser: LightningArgumentParser, args) -> None:
        args = list(sys.argv[1:] if args is None else args)
        # Before anything reads them: a FIFO, a huge, binary or too deeply nested file, `trainer: 5`, is one line.
        check_config_files(args, config_sections(parser, args))
        given = keys_given(args) | keys_in_configs(args)  # what the user typed or wrote, before the line below
        self._given = given
        args = with_checkpoint_classes(args, self.default_model, self.default_data)
        model_class = chosen_class(chosen_class_path(args, "model", self.default_model), L.LightningModule)
        data_class = chosen_class(chosen_class_path(args, "data", self.default_data), L.LightningDataModule)
        # The class the command chooses is the group's default: jsonargparse carries the default class's values over
        # to a chosen class that shares their names (jsonargparse #460), and --print_config prints them from inside
        # the parse, before this method could set them right (a PositiveFloat it cannot even write as YAML).
        classes = {"model": model_class, "data": data_class}
        defaults = {group: {"class_path": class_path(cls)} for group, cls in classes.items() if cls is not None}
        for subcommand in self.subcommands():
            subcommand_parser(parser, subcommand).set_defaults(defaults)
        # A model that requires num_classes or input_shape gets it from the data, which exists only after parsing.
        super().parse_arguments(parser, [*args, *placeholders(model_class, given)])
        # Before LightningCLI reads the checkpoint's hyperparameters, so `last`/`best` are real paths by then.
        if self.config.get("subcommand"):
            subcommand = self.config.subcommand
            config = self.config[subcommand]
            check_class_paths(config)  # before anything is built: `class_path: os.system` would run at instantiation
            apply_quiet(config)
            preflight.check_options(config)
            launchers.check_launch(config.trainer)
            placement.name_run(config, self.default_model, self.default_network, given)
            check_run_files(config)  # no option names a file of the run that another writes (folders/files.py)
            chosen = placement.resolve_checkpoint(subcommand, config, given)  # compared as its fit saved it
            placement.adopt_checkpoint_run(subcommand, config, given, chosen)
            # What a watched metric the model does not log becomes: a given one is refused, a default follows.
            watched = ("checkpoint.monitor", "early_stopping.monitor")
            self._monitored.strict = {f"--{key}" for key in watched if key in given}

    def before_instantiate_classes(self) -> None:
        config = self.config[self.subcommand]
        open_before_run(config)  # a store that cannot open is said before any run folder exists
        with sigterm_held():  # a SIGTERM comes once the folder is recorded, for __init__ to remove it if empty
            self._claimed = placement.claim_run_folder(self.subcommand, config)
        filename = placement.config_filename(self.subcommand, config)
        if filename is not None:
            self.save_config_kwargs["config_filename"] = filename

    def instantiate_classes(self) -> None:
        try:
            with bounded_tensors(self.config[self.subcommand]):  # channels of 1e9 refused before they are allocated
                self._instantiate()
            preflight.check_data(self.subcommand, self.trainer, self.datamodule, self.model)
            preflight.check_callbacks(self.trainer, self.model)
            ckpt_path = self.config[self.subcommand].get("ckpt_path")
            preflight.check_checkpoint_fits(self.model, ckpt_path, evaluating=self.subcommand != "fit")
        # An argument check in an __init__ (split fractions summing past 1, a bad data file), the Trainer's own
        # (an accelerator this machine lacks), or a split too small: nothing ran, and __init__ releases the folder.
        except (ValueError, MisconfigurationException) as error:
            raise UsageError(str(error.__cause__ or error)) from None  # the class's own words, not jsonargparse's

    def _instantiate(self) -> None:
        """LightningCLI's instantiate_classes, in an order that lets the data decide what the model is built with
        (contract/links.py) and the model what the run's best checkpoint watches (monitored.py)."""
        config = self.config[self.subcommand]
        datamodule = self._build("data")
        link_data_to_model(config, datamodule, self.subcommand, self._given)
        self.__dict__.pop("config_dump", None)  # LightningCLI's dump of the config, for the model's hparams: again
        model = self._build("model")
        stated = stated_monitors(model)
        if stated and "checkpoint.monitor" not in self._given:
            config.checkpoint.monitor, config.checkpoint.mode = stated[0]
        if stated:
            self._monitored.strict.add("--checkpoint.monitor")
        if stated_early_stopping(model):  # Lightning puts the model's in place of the run's
            self._monitored.strict.add("--early_stopping.monitor")
        built = self.config.clone()
        built[self.subcommand].data, built[self.subcommand].model = datamodule, model  # built once, not again
        self.config_init = self.parser.instantiate_classes(built)
        self.datamodule, self.model = datamodule, model
        add_configure_optimizers(self, self.subcommand)  # --optimizer / --lr_scheduler, for a model without its own
        self.trainer = self.instantiate_trainer()
        # First among the callbacks: a metric it replaces is in place before early stopping or a checkpoint reads it.
        self.trainer.callbacks.remove(self._monitored)
        self.trainer.callbacks.insert(0, self._monitored)

    def _build(self, key: str):
        """The command's `model` or `data`, alone, by the CLI's own parser: with LightningCLI's instantiators, which
        save the section as the module's hyperparameters (its `_class_path` too)."""
        section = Namespace(**{key: self.config[self.subcommand][key]})
        alone = Namespace(subcommand=self.subcommand, **{self.subcommand: section})
        return self.parser.instantiate_classes(alone, instantiate_groups=False)[self.subcommand][key]

    def instantiate_trainer(self, **kwargs) -> L.Trainer:
        # The last hook before the Trainer, which would add Lightning's default bar (refresh_rate 1) itself.
        config = self.config_init[self.subcommand] if self.subcommand else self.config_init
        if adds_default_progress_bar(config, self.trainer_defaults["callbacks"]):
            # Among the callbacks added to every Trainer, after the config's: it draws what LossMonitor just logged.
            self.trainer_defaults["callbacks"].append(TQDMProgressBar(refresh_rate=PROGRESS_BAR_REFRESH_RATE))
        return super().instantiate_trainer(**kwargs)

    def after_fit(self) -> None:
        # --test_best: the test of the best checkpoint without a second start-up (imports, parsing, data).
        best = self.trainer.checkpoint_callback
        tested = bool(self.config.fit.test_best and best is not None and best.best_model_path)
        if tested:
            self._testing_best = best.best_model_path
            self.trainer.test(self.model, datamodule=self.datamodule, ckpt_path=best.best_model_path)
            self._testing_best = None
        report_fit(self.trainer, tested)  # last, so that it is what the terminal ends with
