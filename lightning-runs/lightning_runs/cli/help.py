"""The parser RunsCLI builds: the default class of `--model` and `--data` set (set_classes), a dump (config.yaml, a
resume's comparison) that keeps a link's target given by hand and writes an Enum as its value, a `--config` file read by
the reader of run files before jsonargparse parses it, and `--help` a person reads: a type with more known subclasses
than a screen holds (a network's `nn.Module`: every module torch, torchmetrics and Lightning import) says how many
rather than listing them. jsonargparse has no setting for it (4.53: `ActionTypeHint.extra_help` lists every imported
subclass, Lightning #20591): argparse's formatter method `_get_help_string` is overridden (private.py)."""

import copy
import enum
import functools
import json
import re
from pathlib import Path

import yaml
from jsonargparse import DefaultHelpFormatter
from lightning.pytorch.cli import LightningArgumentParser

from lightning_runs.errors import UsageError, first_line
from lightning_runs.private import subcommand_parser
from lightning_runs.run_folders import read_run_data

MAX_LISTED = 20  # known subclasses listed in a type's help up to this many (the optimizers are 16)
_KNOWN = re.compile(r", known subclasses: (?P<paths>[^()]*)\)$")


class RunsHelpFormatter(DefaultHelpFormatter):
    def _get_help_string(self, action) -> str:
        text = super()._get_help_string(action)
        known = _KNOWN.search(text)
        count = len(known["paths"].split(", ")) if known else 0
        return f"{text[: known.start()]}, {count} known subclasses)" if known and count > MAX_LISTED else text


class RunsArgumentParser(LightningArgumentParser):
    """jsonargparse leaves every link target out of a dump: a value given by hand where the link has no source (a
    DataModule naming no `sample_shape`, `--model.init_args.input_shape [1,8,8]`) was gone from the run's config.yaml,
    and its own checkpoint then did not fit the model rebuilt from it. Kept where it is not the class's default."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.links: list[tuple[str, str, str]] = []  # (source, target, apply_on), as link_arguments took them
        self.kept: dict | None = None  # get_defaults' results, from set_classes on until set_defaults changes them
        self.last: tuple | None = None  # (config, dump settings), dumped: the config of the parser's one command

    def set_defaults(self, *args, **kwargs) -> None:
        self.kept = None
        super().set_defaults(*args, **kwargs)

    def get_defaults(self, *args, **kwargs):
        # A parse asks its subcommand's defaults (every part's class defaults, 10 ms) twice, the dump once more.
        if self.kept is None or args or kwargs != {"skip_validation": True}:  # as the parse and the dump ask
            return super().get_defaults(*args, **kwargs)
        self.kept = self.kept or {"defaults": super().get_defaults(*args, **kwargs)}
        return self.kept["defaults"].clone()

    def link_arguments(self, source, target, compute_fn=None, apply_on: str = "parse") -> None:
        super().link_arguments(source, target, compute_fn, apply_on)
        self.links.append((source, target, apply_on))

    def parse_path(self, path, *args, **kwargs):
        # jsonargparse reads a --config file whole as UTF-8: a binary, UTF-16 or FIFO file, or a huge integer (5,000
        # figures) was a traceback. The library's reader of its own files says what is wrong in one line first.
        if Path(path).exists():  # else jsonargparse names what is missing
            read_run_data(Path(path), "a --config file is UTF-8 YAML of the command's options", sections=("trainer",))
        return super().parse_path(path, *args, **kwargs)

    def dump(self, cfg, *args, **kwargs) -> str:
        # Every config this parser dumps (config.yaml, Lightning's copy for the model's hyperparameters, a resume's
        # comparison), it parsed and validated: validating again was 60% of each dump.
        kwargs.setdefault("skip_validation", True)
        if kwargs.get("format", "parser_mode") not in ("parser_mode", "yaml") or "skip_link_targets" in kwargs:
            return super().dump(cfg, *args, **kwargs)
        targets = [target for _, target, _ in self.links if target in cfg]
        defaults = self.get_defaults(skip_validation=True) if targets else {}  # as the parse asked: kept
        # the class's default is the link's to set (typed as the default, it is the same value)
        same = [t for t in targets if json.dumps(cfg.get(t), default=str) == json.dumps(defaults.get(t), default=str)]
        if args or self.kept is None or self.parser_mode != "yaml":
            kept = cfg.clone()
            for target in same:
                del kept[target]
            return super().dump(kept, *args, skip_link_targets=False, **kwargs)
        data = self.dumped(cfg, **kwargs)
        for *branch, leaf in (target.split(".") for target in same):
            functools.reduce(lambda branches, key: branches.get(key) or {}, branch, data).pop(leaf, None)
        return "".join(f"# {line}\n" for line in self.dump_header or []) + yaml_dump(data)

    def dumped(self, cfg, **kwargs) -> dict:
        """`cfg` dumped with its link targets, loaded back: one jsonargparse dump of a command's config for its
        config.yaml and Lightning's copy of it for the modules' hyperparameters (and a resume's comparison)."""
        kwargs = {"skip_validation": True, **kwargs, "format": "yaml", "skip_link_targets": False}
        if self.last is None or self.last[0] != (cfg, kwargs):
            self.last = (cfg.clone(), kwargs), yaml.safe_load(super().dump(cfg, **kwargs))
        return copy.deepcopy(self.last[1])


class _Dumper(yaml.SafeDumper):
    """A value of an Enum as its value: a callback whose argument is typed `str` defaults to a str Enum (Timer's
    `interval=Interval.step`), which jsonargparse dumps as it is and PyYAML's safe dumper cannot represent."""


_Dumper.add_multi_representer(enum.Enum, lambda dumper, member: dumper.represent_data(member.value))


def yaml_dump(data) -> str:
    """jsonargparse's YAML dumper (the same settings), set for every dump by RunsCLI (`jsonargparse.set_dumper`)."""
    return yaml.dump(data, Dumper=_Dumper, default_flow_style=False, allow_unicode=True, sort_keys=False)


def set_classes(parser, subcommand: str, classes: dict) -> None:
    """The default class of each group (None: none); a class a run's config or a checkpoint names that cannot be
    imported here is one line."""
    for group, path in classes.items():
        try:
            subcommand_parser(parser, subcommand).set_defaults({group: {"class_path": path} if path else None})
        except (ImportError, ValueError) as error:  # jsonargparse's ImportDenied is both
            raise UsageError(f"--{group} {path}: cannot be imported here ({first_line(error)})") from None
    subcommand_parser(parser, subcommand).kept = {}  # built: its defaults stay until set_defaults changes them
