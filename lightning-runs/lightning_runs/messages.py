"""jsonargparse's errors as one line: the option, what it takes, what it got; the closest real option to a misspelt one.
jsonargparse checks every value itself (types, ranges, class paths) and says where; only its layout (a Union's every
member over ten lines) is condensed here."""

import difflib
import importlib
import re

from jsonargparse import ArgumentParser

from lightning_runs.console import program
from lightning_runs.private import option_nargs, subcommand_parser

_KEY = re.compile(r'Parser key "(?P<key>[\w.]+)":')
_EXPECTED = re.compile(r"Expected a (?:<class '(?:[\w.]+\.)?(?P<type>\w+)'>|typing\.Literal\[(?P<choices>[^\]]*)\])")
_GIVEN = re.compile(r"Given value: (?:NestedArg\(key='[^']*', val='?)?(?P<value>.*?)'?\)?$", flags=re.MULTILINE)
_UNKNOWN = re.compile(r"[Uu]nrecognized arguments: (?P<argument>\S+)")
_NOT_ACCEPTED = re.compile(
    r"class_path '(?P<path>[\w.]+)':\s*Option '(?P<name>\w+)' is not accepted"  # --model.lrr
    # a factory's argument
    r"|Option '(?P<inner>\w+)' is not accepted\. Got value: Namespace\(class_path='(?P<inner_path>[\w.]+)'"
)
_PROBLEM = re.compile(r"Problem with given class_path '(?P<path>[\w.]+)':\s*\n\s*(?P<reason>(?!Parser key)\S[^\n]*)")
_DENIED = re.compile(r"Importing '(?P<path>[\w.]+)' is not allowed")
_NOISE = ("Does not validate against", "Subtypes:", "Errors:", "Given value", "- Expected a <class 'NoneType'>")


def condensed(error: Exception, parser) -> str:
    message = str(error)
    if unknown := _UNKNOWN.search(message):
        return _unknown(unknown["argument"].split("=")[0], _options(parser), parser)
    keys = [match["key"] for match in _KEY.finditer(message)]
    if denied := _DENIED.search(message):  # jsonargparse's import path denylist, which RunsCLI enforces
        return f"--{'.'.join(keys)}: {denied['path']} may not be imported from a value (it runs code)"
    if rejected := _NOT_ACCEPTED.search(message):  # an argument the chosen class does not take (--model.lrr)
        group = ".".join(keys)
        path, name = rejected["path"] or rejected["inner_path"], rejected["name"] or rejected["inner"]
        options = [f"--{group}.{argument}" for argument in class_arguments(path)]
        return _unknown(f"--{group}.{name}", options)
    expected = [m["type"] or f"one of {m['choices']}" for m in _EXPECTED.finditer(message) if m["type"] != "NoneType"]
    given = _GIVEN.search(message)
    if problem := _PROBLEM.search(message):  # the chosen class's own failure, not every type the option takes
        reason = f"{problem['path']}: {problem['reason'].strip()}"
    elif expected and given:
        reason = f"expected {' or '.join(dict.fromkeys(expected))}, got {given['value']}"
    else:
        inner = _KEY.sub("", message[message.rfind('Parser key "') :] if keys else message)
        lines = [line.strip(" -") for line in inner.splitlines() if line.strip()]
        reason = next((line for line in lines if not line.startswith(_NOISE)), lines[0] if lines else message)
    return f"--{'.'.join(dict.fromkeys(keys))}: {reason}" if keys else reason


def _unknown(option: str, options: list[str], parser=None) -> str:
    close = difflib.get_close_matches(option, options, n=1, cutoff=0.6)
    tool = parser is not None and getattr(parser, "_subcommands_action", None) is None  # a tool's own parser
    usage = f"{parser.prog} --help" if tool else f"{program()} <subcommand> --help"
    hint = f"did you mean {close[0]}?" if close else f"{usage} lists the options"
    return f"unknown option {option}: {hint}"


def class_parser(class_path: str) -> ArgumentParser | None:
    """A parser of the arguments a class takes, as jsonargparse reads its signature; None for a class it cannot read."""
    module, _, name = class_path.rpartition(".")
    parser = ArgumentParser()
    try:
        parser.add_class_arguments(getattr(importlib.import_module(module), name), fail_untyped=False)
    except (ImportError, AttributeError, ValueError, TypeError):
        return None
    return parser


def class_arguments(class_path: str) -> list[str]:
    """The arguments a class takes (imported already by the parse)."""
    parser = class_parser(class_path)
    options = list(option_nargs(parser)) if parser is not None else []
    return [option[2:] for option in options if option.startswith("--") and option != "--help"]


def subcommand_options(parser, name: str) -> dict:
    """A subcommand's options, each with the values it takes (its `nargs`, 0 for a flag), the default model's and
    data's arguments among them: in subclass mode they are no options until a class path is parsed."""
    subcommand = subcommand_parser(parser, name)
    options, defaults = option_nargs(subcommand), subcommand.get_defaults()
    for group in ("model", "data"):
        path = getattr(defaults.get(group), "class_path", None)
        options |= {f"--{group}.{argument}": 1 for argument in class_arguments(path)} if path else {}
    return options


def _options(parser) -> list[str]:
    """The options of the subcommand the error came from, and the default classes' arguments their groups take."""
    if parser is None:
        return []
    found = list(option_nargs(parser))
    for name in ("fit", "validate", "test", "predict"):  # RunsCLI builds the typed one's parser only
        try:
            found += list(subcommand_options(parser, name))
        except (AttributeError, KeyError):
            continue
    return [option for option in found if option.startswith("--")]
