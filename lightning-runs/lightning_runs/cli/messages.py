"""jsonargparse's errors as one line: the option, what it takes, what it got; the closest real option for a misspelt one.
jsonargparse checks every value itself (types, ranges, class paths) and says where; only its layout (a Union's every
member over ten lines) is condensed here."""

import difflib
import re

from lightning_runs.console import program
from lightning_runs.errors import UsageError
from lightning_runs.private import option_strings, subcommand_parser

_KEY = re.compile(r'Parser key "(?P<key>[\w.]+)":')
_EXPECTED = re.compile(r"Expected a (?:<class '(?:[\w.]+\.)?(?P<type>\w+)'>|typing\.Literal\[(?P<choices>[^\]]*)\])")
_GIVEN = re.compile(r"Given value: (?P<value>.*)")
_UNKNOWN = re.compile(r"[Uu]nrecognized arguments: (?P<argument>\S+)")
_NOISE = ("Does not validate against", "Subtypes:", "Errors:", "Given value", "- Expected a <class 'NoneType'>")


def condensed(error: Exception, parser) -> UsageError:
    message = str(error)
    if unknown := _UNKNOWN.search(message):
        option = unknown["argument"].split("=")[0]
        options = _options(parser, message)
        close = difflib.get_close_matches(option, options, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else f"{program()} <subcommand> --help lists the options"
        return UsageError(f"unknown option {option}: {hint}")
    keys = [match["key"] for match in _KEY.finditer(message)]
    expected = [m["type"] or f"one of {m['choices']}" for m in _EXPECTED.finditer(message) if m["type"] != "NoneType"]
    given = _GIVEN.search(message)
    if expected and given:
        reason = f"expected {' or '.join(dict.fromkeys(expected))}, got {given['value']}"
    else:
        inner = _KEY.sub("", message[message.rfind('Parser key "') :] if keys else message)
        lines = [line.strip(" -") for line in inner.splitlines() if line.strip()]
        reason = next((line for line in lines if not line.startswith(_NOISE)), lines[0] if lines else message)
    where = f"--{'.'.join(dict.fromkeys(keys))}: " if keys else ""
    return UsageError(f"{where}{reason}")


def _options(parser, message: str) -> list[str]:
    """The options of the subcommand the error came from, and the default classes' arguments their groups take."""
    found = option_strings(parser)
    for name in ("fit", "validate", "test", "predict"):
        try:
            found += option_strings(subcommand_parser(parser, name))
        except (AttributeError, KeyError):
            break
    return [option for option in found if option.startswith("--")]
