"""RunsCLI: a LightningCLI whose runs are named folders that resume exactly, stop cleanly and say what they did.

    RunsCLI(MyModel, MyData, trainer_defaults={...}, name="my_exp", args=args)

It composes the library's parts (cli/parts.py: each an option group, each switchable) around any LightningModule and
DataModule chosen by class path (`--model my.Module`, `--data my.Data`), and places every command in its run
(placement.py). A project's own subclass links its data to its model and sets its recipe's part defaults in
`add_arguments_to_parser`, as LightningCLI's documentation does.
"""

import contextlib
import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import lightning as L
import yaml
from jsonargparse import ArgumentError, set_dumper, set_parsing_settings
from lightning.fabric.utilities.seed import max_seed_value, min_seed_value
from lightning.pytorch.callbacks import Callback, ModelCheckpoint, ProgressBar, TQDMProgressBar
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI
from lightning.pytorch.utilities.model_helpers import is_overridden

from lightning_runs import TOOLS, private
from lightning_runs.checkpoints import InitFrom
from lightning_runs.checkpoints.checkpoint_io import forget_read, read_checkpoint
from lightning_runs.cli import evaluation, placement
from lightning_runs.cli.declared import check_declared
from lightning_runs.cli.help import RunsArgumentParser, RunsHelpFormatter, set_classes, yaml_dump
from lightning_runs.cli.parts import TRAINER_DEFAULTS, add_parts
from lightning_runs.console import PLACEHOLDER, library_noise_silenced, program, say, set_program, set_quiet
from lightning_runs.errors import Terminated, UsageError, said
from lightning_runs.faults.loader_check import check_limits
from lightning_runs.messages import condensed
from lightning_runs.private import print_config_deferred, print_config_if_requested
from lightning_runs.records import SaveConfigInRun, report_fit
from lightning_runs.signals import sigterm_held, terminated_outside_training

# Lightning's bar redraws after every batch: 7% of the example's fit phase. Every 10th is still several a second.
PROGRESS_BAR_REFRESH_RATE = 10


def class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class RunsCLI(LightningCLI):
    """`model_class` and `datamodule_class`: the defaults of `--model` and `--data`, which take any LightningModule and
    LightningDataModule by class path; `name`: the runs' name where neither `--name` nor a config file gives one
    (the model's package by default); `callbacks`: objects a config cannot build, added to every Trainer."""

    def __init__(
        self,
        model_class: type[L.LightningModule],
        datamodule_class: type[L.LightningDataModule] | None = None,
        trainer_defaults: dict | None = None,
        name: str | None = None,
        callbacks: Sequence[Callback] = (),
        args: list[str] | None = None,
        **kwargs,
    ) -> None:
        self.defaults, self.default_model = {"model": class_path(model_class)}, model_class
        self.defaults |= {"data": class_path(datamodule_class)} if datamodule_class else {}
        self.default_name = name or model_class.__module__.partition(".")[0]
        self.args = list(sys.argv[1:] if args is None else args)
        if program() == PLACEHOLDER:  # a cli_main called without lightning_runs.main (a test, a notebook)
            set_program(model_class.__module__.partition(".")[0])
        self.added = list(callbacks)
        self.run = self.tested = self.testing = None
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # tensorboard's optional TensorFlow import is noisy
        # jsonargparse's own denylist (os, subprocess, eval, ...) enforced: a class_path or callable that a config, a
        # command line or a checkpoint's hyperparameters name never runs a command (only warned by default, 4.53).
        set_parsing_settings(import_path_denylist=[])
        set_dumper("yaml", yaml_dump)  # a callback's str Enum default (Timer's) dumped, for config.yaml and a resume
        common = {"exit_on_error": False, "allow_abbrev": False, "formatter_class": RunsHelpFormatter}
        epilog = "tools, each with its --help: " + ", ".join(f"{program()} {tool}" for tool in TOOLS)
        parser_kwargs: dict = {**common, "prog": program(), "epilog": epilog, **kwargs.pop("parser_kwargs", {})}
        parser_kwargs |= {name: {**common, **parser_kwargs.get(name, {})} for name in self.subcommands()}
        refused = False
        with library_noise_silenced(), terminated_outside_training():
            try:
                super().__init__(
                    L.LightningModule,
                    None,  # not required: a module with its own loaders runs without one (--data null)
                    subclass_mode_model=True,
                    subclass_mode_data=True,
                    seed_everything_default=0,
                    trainer_defaults={**TRAINER_DEFAULTS, **(trainer_defaults or {})},
                    save_config_callback=SaveConfigInRun,
                    parser_kwargs=parser_kwargs,
                    parser_class=kwargs.pop("parser_class", RunsArgumentParser),
                    args=self.args,
                    **kwargs,
                )
            except Terminated:
                refused = True
                raise Terminated(self._stopped()) from None
            except BaseException as error:  # bad input (exit 2) leaves no run folder it made, even one begun
                refused = (said(error) or ("", 0))[1] == 2
                raise
            finally:  # LightningCLI runs the subcommand inside __init__: it ends here, however it ends
                if self.run is not None:
                    self.run.release(refused)
                forget_read()

    def _stopped(self) -> str:
        """What a SIGTERM outside the training loop stopped, for the entry point's line."""
        subcommand, trainer = getattr(self, "subcommand", None), getattr(self, "trainer", None)
        if trainer is None:
            return "stopped by SIGTERM before the run started; nothing was written"
        if self.testing:
            return (
                f"stopped by SIGTERM while testing {self.testing}; the fit had finished and saved its checkpoints;"
                f" test it with: {program()} test --ckpt_path {self.testing}"
            )
        if subcommand == "fit" and trainer.global_step:
            return f"stopped by SIGTERM after training, at step {trainer.global_step}; its checkpoints are saved"
        return f"stopped by SIGTERM during {subcommand}; run the same command again"

    def subcommands(self) -> dict[str, set[str]]:
        """Only the subcommand the command starts with: each subcommand's parser is most of a command's start-up."""
        every = LightningCLI.subcommands()
        first = self.args[0] if self.args else None
        return {first: every[first]} if first in every else every

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.set_defaults({group: {"class_path": path} for group, path in self.defaults.items()})
        add_parts(parser)

    def parse_arguments(self, parser: LightningArgumentParser, args) -> None:
        try:
            with print_config_deferred():
                self._parse(parser)
        except ArgumentError as error:
            raise UsageError(condensed(error, parser)) from None
        print_config_if_requested(parser, self.config)
        subcommand = self.config.get("subcommand")
        config = self.config[subcommand]
        seed = config.get("seed_everything")  # Lightning checks numpy's bounds after the parse, with a traceback
        if type(seed) is int and not min_seed_value <= seed <= max_seed_value:
            raise UsageError(f"--seed_everything {seed}: a seed is from {min_seed_value} to {max_seed_value}")
        # The checkpoint's hyperparameters were a layer of the parse, under what was typed: Lightning's own merge, over
        # it (LightningCLI reads ckpt_path right after this hook), is skipped by holding the path until the build.
        self.evaluated = config.get("ckpt_path") if subcommand in evaluation.EVALUATIONS else None
        if not evaluation.BUILDING.get():
            check_limits(subcommand, config)  # before the run folder: a command with nothing to run makes none
            saved = self.save_config_kwargs.get("config_filename", "config.yaml")  # SaveConfigCallback's default
            placement.check_run_files(config, self._parser(subcommand).callback_keys, saved)
            with sigterm_held():  # a SIGTERM comes once the folder is recorded, for __init__ to remove it if empty
                self.run = placement.claim(subcommand, config)
            if self.evaluated:
                evaluation.say_evaluated(subcommand, Path(self.evaluated), self.run.path if self.run else None)
        config.ckpt_path = None if self.evaluated else config.get("ckpt_path")

    def _parse(self, parser) -> None:
        subcommand = next((arg for arg in self.args if arg in LightningCLI.subcommands()), None)
        args, classes, self.from_checkpoint = self.args, None, []
        if subcommand in evaluation.EVALUATIONS:
            given = evaluation.typed(self.args, "--ckpt_path")
            named = given in ("last", "best") or (given is None and any(a.startswith("--config") for a in self.args))
            if named:  # the run is found by its name (or a config names the checkpoint): what names it, parsed first
                given = self._parsed(parser, evaluation.without_classes(self.args), subcommand, checked=False)
            configs, classes, self.from_checkpoint = evaluation.layers(Path(given)) if given else ([], {}, [])
            at = self.args.index(subcommand) + 1
            args = [*self.args[:at], *[arg for text in configs for arg in ("--config", text)], *self.args[at:]]
            if named and given:  # found: looked for again, the version its run's config.yaml gives could be another
                args.append(f"--ckpt_path={given}")
        self._parsed(parser, args, subcommand, classes)  # ty: ignore[invalid-argument-type]  # None: the parse says so
        extra = self.config[subcommand].model.get("dict_kwargs") or {}  # ty: ignore[invalid-argument-type]  # parsed: a subcommand was given
        for key in self.from_checkpoint:  # what a link gave a class that does not take it (a GAN given num_classes)
            extra.pop(key, None)

    def _parsed(self, parser, args: list[str], subcommand: str, classes: dict | None = None, checked: bool = True):
        """Parse, name the run and find its checkpoint; a resume is compared with its run. Returns the checkpoint an
        evaluation uses (its run's config is the evaluation's first layer). `checked=False`: the whole config is not
        validated at the end (what names an evaluation's run, parsed again with that run's config and validated)."""
        self.config = self._parse_chosen(parser, args, subcommand, classes, checked)
        config = self.config[subcommand]
        set_quiet(config.quiet)
        placement.name_run(config, self.default_name)
        path = placement.resolve_checkpoint(subcommand, config)
        if path is None or subcommand != "fit":
            return path
        placement.resume(config, path, yaml.safe_load(self._parser(subcommand).dump(config, skip_none=False)))
        return None

    def _parse_chosen(self, parser, args: list[str], subcommand: str | None, classes=None, checked: bool = True):
        """The classes of --model and --data are their groups' defaults (`classes`: a run's), and a class chosen
        otherwise makes the command parsed again with it as the default: jsonargparse carries the default class's
        values over to a chosen class sharing their names (lr 0.05 for a class whose own default is 0.01, the default
        class's input_shape for a table's model; jsonargparse #460). The default data goes with the default model (and
        its subclasses): another model has none unless its command, config or run names one."""
        if subcommand is None:  # jsonargparse says what is missing
            return parser.parse_args(args)
        # A class typed by its path is the first parse's default: one parse, not two.
        defaults = {**self.defaults, **(classes or {}), **self._typed_classes(parser, subcommand, args)}
        set_classes(parser, subcommand, {"model": defaults["model"]})  # imported by jsonargparse here
        named = any(arg.startswith("--data") for arg in args)  # --data.batch_size 8: the default data, asked for
        if "data" not in (classes or {}) and not named and not self._default_data_for(defaults["model"]):
            defaults["data"] = None
        set_classes(parser, subcommand, {"data": defaults.get("data")})
        parse = parser.parse_args if checked else functools.partial(private.parsed_unchecked, parser)
        config = parse(args)
        chosen = {group: (config[subcommand].get(group) or {}).get("class_path") for group in evaluation.GROUPS}
        if chosen["data"] == self.defaults.get("data") and not named and not self._default_data_for(chosen["model"]):
            chosen["data"] = None
        if chosen != {group: defaults.get(group) for group in evaluation.GROUPS}:
            set_classes(parser, subcommand, chosen)
            config = parse(args)
        return config

    @staticmethod
    def _typed_classes(parser, subcommand: str, args: list[str]) -> dict:
        """`--model <class path>` and `--data <class path>` as typed, where they import (else jsonargparse words it)."""
        found = {}
        for group in evaluation.GROUPS:
            path = evaluation.typed(args, f"--{group}")
            with contextlib.suppress(UsageError):
                if path and "." in path:
                    set_classes(parser, subcommand, {group: path})
                    found[group] = path
        return found

    def _default_data_for(self, model: str | None) -> bool:
        found = placement.imported(model)
        return model == self.defaults["model"] or (isinstance(found, type) and issubclass(found, self.default_model))

    def before_instantiate_classes(self) -> None:
        config = self.config[self.subcommand]  # ty: ignore[invalid-argument-type]  # parsed: a subcommand was given
        if not self.evaluated:
            return
        config.ckpt_path = self.evaluated
        data = (config.get("data") or {}).get("init_args")
        if data is not None and os.path.isfile(config.ckpt_path):
            # What the DataModule found itself and saved (a file's class count, left null in config.yaml), as Lightning
            # gives the model its saved hyperparameters: predicting new samples needs no training file.
            saved = read_checkpoint(config.ckpt_path).get("datamodule_hyper_parameters") or {}
            for key in [key for key in saved if key in data and data[key] is None]:
                data[key] = saved[key]

    def instantiate_classes(self) -> None:
        # Lightning's copy of the config for the modules' hyperparameters: config.yaml's dump (it dumped it again)
        if self.subcommand and isinstance(parser := self._parser(self.subcommand), RunsArgumentParser):
            private.set_config_dump(self, parser.dumped(self.config[self.subcommand], skip_none=False))
        try:
            with private.datamodules_described_plainly():
                super().instantiate_classes()
        except (ValueError, TypeError) as error:  # an __init__'s own check (a split past 1, a file of no samples)
            raise UsageError(str(error.__cause__ or error).strip().splitlines()[-1]) from None
        if self.subcommand == "fit":
            # The default model's defaults are the default data's: another DataModule gives those or the command does.
            other_data = self.datamodule is not None and class_path(type(self.datamodule)) != self.defaults.get("data")
            links = self._parser("fit") if isinstance(self.model, self.default_model) and other_data else None
            explicit = lambda: private.given_options(self.parser, self.args).fit  # noqa: E731
            check_declared(self.model, self.datamodule, self.config.fit, links, explicit)

    def after_instantiate_classes(self) -> None:
        # export: the module and data are what it needs; LightningCLI runs no subcommand then
        if evaluation.BUILDING.get():
            self.subcommand = None
        elif self.subcommand in ("test", "predict"):
            evaluation.check_step(self.model, self.subcommand)

    def instantiate_trainer(self, **kwargs) -> L.Trainer | None:  # ty: ignore[incompatible-method-override]  # None: export builds no Trainer
        if evaluation.BUILDING.get():
            return None
        config = self.config_init[self.subcommand]
        parts = [config[key] for key in self._parser(self.subcommand).callback_keys if config.get(key) is not None]
        callbacks = [*parts, *self.added] + (
            [InitFrom(config.init_from, config.freeze)] if config.init_from or config.freeze else []
        )
        settings = {**config.trainer, **kwargs}
        if config.quiet:
            settings |= {"enable_progress_bar": False, "enable_model_summary": False}
        listed = [*callbacks, *(settings.get("callbacks") or [])]
        if settings.get("enable_progress_bar") is not False and not any(isinstance(c, ProgressBar) for c in listed):
            callbacks.append(TQDMProgressBar(refresh_rate=PROGRESS_BAR_REFRESH_RATE))
        return self._instantiate_trainer(settings, callbacks)

    def after_fit(self) -> None:
        best = self.trainer.checkpoint_callback
        if self.config.fit.test_best and isinstance(best, ModelCheckpoint) and best.best_model_path:
            if is_overridden("test_step", self.model):
                self.testing = best.best_model_path
                self.trainer.test(self.model, datamodule=self.datamodule, ckpt_path=best.best_model_path)
                self.testing = None
                self.tested = {k: v for k, v in self.trainer.callback_metrics.items() if k.startswith("test")}
            else:
                say(f"--test_best: {type(self.model).__name__} has no test_step, so the best checkpoint is not tested")
        report_fit(self.trainer, self.tested)
