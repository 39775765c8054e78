"""The CLI's argument parser: a bad option is one short line naming it (with the closest real option for a
typo), raised as a UsageError, instead of jsonargparse's usage dump of 100+ lines; and its YAML is checked before
anything is built from it (yaml_limits.py)."""

import difflib
import importlib
import re
from typing import ClassVar

import yaml
from jsonargparse import ArgumentError, ArgumentParser, set_loader
from lightning.pytorch.cli import LightningArgumentParser

from lightning_runs.cli.help import ReadableHelp
from lightning_runs.cli.references import NOT_IMPORTED
from lightning_runs.cli.yaml_limits import ParseError, bounded_yaml_load
from lightning_runs.console import program
from lightning_runs.private import option_strings

BOUNDED_YAML = "bounded_yaml"  # the parser mode of every ProjectParser: YAML, checked first (bounded_yaml_load)


class ProjectParser(ReadableHelp, LightningArgumentParser):
    """`concise`: set on the parsers LightningCLI builds (the main one and one per subcommand), whose errors reach
    the user; jsonargparse's own nested parsers (one per class argument) keep its wording, which it composes."""

    concise = False
    # group -> the class path it defaults to (`model`, `data`): their options are offered for a misspelt one
    class_defaults: ClassVar[dict[str, str]] = {}

    def __init__(self, *args, **kwargs) -> None:
        # `--trainer.max_epoch 2` must not silently mean --trainer.max_epochs: no prefix matching.
        kwargs.setdefault("allow_abbrev", False)
        # Config files and values given inline, here and in every parser jsonargparse nests in this one (they take
        # its mode), load through bounded_yaml_load; jsonargparse's own "yaml" mode stays as it was for other parsers.
        set_loader(BOUNDED_YAML, bounded_yaml_load, exceptions=(yaml.YAMLError,))
        kwargs.setdefault("parser_mode", BOUNDED_YAML)
        super().__init__(*args, **kwargs)

    def error(self, message: str, ex: Exception | None = None):
        self.logger.error(message)
        if isinstance(ex, ParseError):  # a subcommand's error on its way out through the main parser
            raise ex
        if not self.concise:
            raise ArgumentError(None, message) from ex
        options = option_strings(self)
        for group, class_path in self.class_defaults.items():
            options += [f"--{group}.{option}" for option in class_options(class_path, nested=True)]
        raise ParseError(concise(message, options)) from ex


_UNKNOWN = re.compile(r"unrecognized arguments: (?P<argument>\S+)")
_KEY = re.compile(r'Parser key "(?P<key>[\w.]+)":')
# A bad value of a class chosen by class path (--data.batch_size 0) comes back as a failed match against every type
# --data allows; the reason given for the chosen class is what the user needs.
_SUBCLASS = re.compile(
    r"Problem with given class_path '[\w.]+':\s*(?P<reason>.*?)"
    r"(?:\n\s*- Expected a <class 'NoneType'>|\n\s*Given value|$)",
    flags=re.DOTALL,
)
_RESTRICTED = re.compile(r"Not of type (?P<type>\w+): (?P<value>.*?) does not conform to restriction (?P<rule>.+)")
_NOT_CONVERTED = re.compile(r"Not of type (?P<type>\w+): .*'(?P<value>.*)'$")
_GIVEN = re.compile(r"(?:Given|Got) value: (?P<value>.*?)(?:\. Got value: .*)?$", flags=re.MULTILINE)
_EXPECTED = re.compile(r"Expected a (?:<class '(?P<type>[\w.]+)'>|typing\.Literal\[(?P<choices>[^\]]*)\])")
_NOT_SUBCLASS = re.compile(
    r"(?:Import path |Expected ')(?P<path>[\w.]+)'? (?:does not correspond to|to be) a subclass of"
    r" (?:<class ')?(?P<base>\w+)"
)
# A value of a class-typed option that is neither a class path nor a mapping (`model: 5`): jsonargparse lists what
# each type of the Union expects, over nine lines.
_NOT_A_CLASS = re.compile(r"Not a valid subclass of (?P<base>\w+)\s+Subclass types expect one of")
_IMPORT_PATH = re.compile(r"Expected a dot import path string: (?P<value>\S+)")
_NO_ATTRIBUTE = re.compile(r"module '(?P<module>[\w.]+)' has no attribute '(?P<name>\w+)'")
# An unknown argument of a class chosen by class path (--model.network.dropuot, --data.batch_sise) and that class.
_NOT_ACCEPTED = re.compile(r"Option '(?P<name>\w+)' is not accepted")
_CLASS_PATH = re.compile(r"class_path=?\s?'(?P<path>[\w.]+)'")


def concise(message: str, options: list[str]) -> str:
    """One line: what is wrong, where, and (for a misspelt option) the closest real one."""
    if unknown := _UNKNOWN.search(message):
        argument = unknown["argument"].split("=")[0]
        if not argument.startswith("-"):
            return f"unexpected argument {argument!r}: {_help()}"
        return _unknown(argument, [option for option in options if option.startswith("--")])
    key, reason = _innermost(message)
    if key is None:
        return _one_line(message)
    if rejected := _NOT_ACCEPTED.search(reason):
        chosen = _CLASS_PATH.findall(message)  # the innermost class named, whose option it is
        accepted = class_options(chosen[-1]) if chosen else []
        return _unknown(f"--{key}.{rejected['name']}", [f"--{key}.{option}" for option in accepted])
    return f"--{key}: {_reason(reason)}"


def _unknown(option: str, options: list[str]) -> str:
    """The closest option of the same group (--trainer.max_epoch: --trainer.max_epochs), or of any group when the
    group itself is misspelt (--modle.lr: --model.lr)."""
    group, _, name = option.rpartition(".")
    siblings = {o.rpartition(".")[2]: o for o in options if o.rpartition(".")[0] == group}
    if siblings:
        close = [siblings[match] for match in difflib.get_close_matches(name, siblings, n=1, cutoff=0.6)]
    else:
        close = difflib.get_close_matches(option, options, n=1, cutoff=0.6)
    return f"unknown option {option}: " + (f"did you mean {close[0]}?" if close else _help())


def _help() -> str:
    return f"{program()} <subcommand> --help lists the options"


def class_options(class_path: str, nested: bool = False) -> list[str]:
    """The arguments a class takes, as jsonargparse sees them (a subclass's **kwargs are its parent's); `nested`: with
    those of a class given as an argument's default (`network.dropout` of a default network class), one level down."""
    parser = _class_parser(class_path)
    if parser is None:  # no suggestion then, the error line still prints
        return []
    try:
        defaults = parser.get_defaults()
    except Exception:  # a required argument (no default): its name is still an option
        return [o.removeprefix("--") for o in option_strings(parser) if o.startswith("--") and o != "--help"]
    options = list(vars(defaults))
    for name in list(options) if nested else []:
        default = defaults[name]
        inner = default.class_path if hasattr(default, "class_path") else None
        if isinstance(default, type):
            inner = f"{default.__module__}.{default.__qualname__}"
        options += [f"{name}.{option}" for option in class_options(inner)] if inner else []
    return options


def _class_parser(class_path: str) -> ArgumentParser | None:
    module, _, name = class_path.rpartition(".")
    parser = ArgumentParser()
    try:
        parser.add_class_arguments(getattr(importlib.import_module(module), name))
    except (ImportError, AttributeError, ValueError):
        return None
    return parser


def _innermost(message: str) -> tuple[str | None, str]:
    """The option's full name and what was said about it, through nested class arguments: jsonargparse reports
    `--model.network.dropout x` as key "model.network", then key "dropout" inside the network's own message."""
    keys = []
    while key := _KEY.search(message):
        keys.append(key["key"])
        message = message[key.end() :]
        if subclass := _SUBCLASS.search(message):
            message = subclass["reason"]
    return ".".join(keys) or None, message


def _reason(message: str) -> str:
    if refused := NOT_IMPORTED.search(message):
        path = f"{refused['module']}.{refused['name']}"
        return (
            f"{path}: {refused['module']} does not define {refused['name']}, so nothing was imported; give a class path"
        )
    if bases := _NOT_SUBCLASS.findall(message):  # a class of another base (`subprocess.Popen` as a callback)
        return f"{bases[0][0]} is not a subclass of {' or '.join(dict.fromkeys(base for _, base in bases))}"
    if not_a_class := _NOT_A_CLASS.search(message):
        given = _GIVEN.search(message)
        return (
            f"expected a class path (a {not_a_class['base']}) or a mapping with its class_path and init_args, got"
            f" {given['value'] if given else '?'}"
        )
    if restricted := _RESTRICTED.search(message):
        return f"expected {restricted['type']} ({restricted['rule']}), got {restricted['value']}"
    if not_converted := _NOT_CONVERTED.search(message):
        return f"expected {not_converted['type']}, got {not_converted['value']}"
    if path := _IMPORT_PATH.search(message):
        return f"{path['value']} is not an importable class; give its class path (module.Class)"
    if missing := _NO_ATTRIBUTE.search(message):
        return f"{missing['module']} has no {missing['name']}"
    if expected := _expected(message):
        given = _GIVEN.search(message)
        return f"expected {expected}, got {(given['value'] or repr('')) if given else '?'}"
    return _one_line(message)


def _expected(message: str) -> str | None:
    """`float or int`, `one of step, epoch`: what the type, or each type of a Union, accepts. None: not said."""
    types, choices = [], {}
    for match in _EXPECTED.finditer(message):
        if match["choices"]:
            choices |= dict.fromkeys(choice.strip().strip("'") for choice in match["choices"].split(","))
        elif match["type"] != "NoneType":  # every Optional option lists it; nobody means to type None
            types.append(match["type"])
    if choices:
        types.append(f"one of {', '.join(choices)}")
    return " or ".join(types) or None


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.strip().splitlines() if line.strip())
