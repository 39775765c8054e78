"""The CLI's argument parser: a bad option is one short line naming it (with the closest real option for a
typo), raised as a UsageError, instead of jsonargparse's usage dump of 100+ lines."""

import difflib
import re

from jsonargparse import ArgumentError
from lightning.pytorch.cli import LightningArgumentParser

from project.core.errors import UsageError

HELP = "python -m project <subcommand> --help lists the options"


class ParseError(ArgumentError, UsageError):
    """An ArgumentError to jsonargparse, which catches and rewraps these internally; a UsageError to the entry point."""

    def __init__(self, message: str) -> None:
        super().__init__(None, message)


class ProjectParser(LightningArgumentParser):
    """`concise`: set on the parsers LightningCLI builds (the main one and one per subcommand), whose errors reach
    the user; jsonargparse's own nested parsers (one per class argument) keep its wording, which it composes."""

    concise = False

    def __init__(self, *args, **kwargs) -> None:
        # `--trainer.max_epoch 2` must not silently mean --trainer.max_epochs: no prefix matching.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str, ex: Exception | None = None):
        self._logger.error(message)
        if isinstance(ex, ParseError):  # a subcommand's error on its way out through the main parser
            raise ex
        if not self.concise:
            raise ArgumentError(None, message) from ex
        raise ParseError(concise(message, list(self._option_string_actions))) from ex


_UNKNOWN = re.compile(r"unrecognized arguments: (?P<option>--?[\w.\-]+)")
_KEY = re.compile(r'Parser key "(?P<key>[\w.]+)"')
# A bad value of a class chosen by class path (--data.batch_size 0) comes back as a failed match against every type
# --data allows; the reason given for the chosen class is what the user needs.
_SUBCLASS = re.compile(
    r"Problem with given class_path '[\w.]+':\s*(?:Parser key \"(?P<key>[\w.]+)\":\s*)?(?P<reason>.*?)(?:\n\s*- |$)",
    flags=re.DOTALL,
)
_RESTRICTED = re.compile(r"Not of type (?P<type>\w+): (?P<value>.*?) does not conform to restriction (?P<rule>\S+)")
_GIVEN = re.compile(r"Given value: (?P<value>.*)$", flags=re.MULTILINE)
_EXPECTED = re.compile(r"Expected a <class '(?P<type>[\w.]+)'>")
_IMPORT_PATH = re.compile(r"Expected a dot import path string: (?P<value>\S+)")
_NO_ATTRIBUTE = re.compile(r"module '(?P<module>[\w.]+)' has no attribute '(?P<name>\w+)'")


def concise(message: str, options: list[str]) -> str:
    """One line: what is wrong, where, and (for a misspelt option) the closest real one."""
    unknown = _UNKNOWN.search(message)
    if unknown:
        option = unknown["option"].split("=")[0]
        close = difflib.get_close_matches(option, [o for o in options if o.startswith("--")], n=1, cutoff=0.6)
        return f"unknown option {option}: " + (f"did you mean {close[0]}?" if close else HELP)
    keys = _KEY.findall(message)
    key = keys[0] if keys else None
    subclass = _SUBCLASS.search(message)
    if subclass:
        key = ".".join(filter(None, [key, subclass["key"]]))
        message = subclass["reason"]
    if key is None:
        return _one_line(message)
    if restricted := _RESTRICTED.search(message):
        return f"--{key}: expected {restricted['type']} ({restricted['rule']}), got {restricted['value']}"
    if path := _IMPORT_PATH.search(message):
        return f"--{key}: {path['value']} is not an importable class; give its class path (module.Class)"
    if missing := _NO_ATTRIBUTE.search(message):
        return f"--{key}: {missing['module']} has no {missing['name']}"
    if "Does not validate against any of the Union subtypes" in message:
        expected = [t for t in _EXPECTED.findall(message) if t != "NoneType"]
        given = _GIVEN.search(message)
        return f"--{key}: expected {' or '.join(expected) or 'another type'}, got {given['value'] if given else '?'}"
    return f"--{key}: {_one_line(_KEY.sub('', message)).lstrip(': ')}"


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.strip().splitlines() if line.strip())
