"""`fit --help` that a person reads: the options of the model and the data it builds by default first, then the
rest, each with the first sentence of its documentation; the usage line names the top-level options only, and a
type with more known subclasses than a screen holds (a network's `nn.Module`: every module torch, torchmetrics and
Lightning import) says how many rather than listing them.

jsonargparse has no setting for any of this (4.53: `ActionTypeHint.extra_help` always lists every imported subclass,
Lightning #20591), so RunsHelpFormatter overrides argparse's formatter methods (lightning_runs/private.py lists them;
tests/test_private_apis.py fails when they change). `ReadableHelp` is the parser's side: its formatter, and the
default classes' options placed at the top.
"""

import argparse
import re
from importlib import import_module

from jsonargparse import ArgumentParser, DefaultHelpFormatter, Namespace

# Known subclasses listed in a type's help up to this many (the optimizers are 16, the LR schedulers 18).
MAX_LISTED = 20
# More options than this in a usage line and it names only the top-level ones (`--trainer CONFIG`, not each field).
MAX_USAGE_OPTIONS = 20

_KNOWN = re.compile(r", known subclasses: (?P<paths>[^()]*)\)$")
# Lightning's docstrings repeat their default ("Default: ``'auto'``.", "Defaults to ``None``."), which the help's own
# `default:` states as the value this CLI really uses (the project's recipe may differ).
_DEFAULT_SENTENCE = re.compile(r"\s*Defaults?(?: to|:) ``[^`]*``\.?")
_FIRST_SENTENCE = re.compile(r"(?P<sentence>.*?\.)\s+(?=[A-Z`(])", flags=re.DOTALL)
DOCS_NOTE = (
    "Each option shows the first sentence of its documentation; the rest is its class's docstring"
    " (python -m pydoc lightning.pytorch.Trainer, ...)."
)


def first_sentence(text: str) -> str:
    text = _DEFAULT_SENTENCE.sub("", text).strip()
    first = _FIRST_SENTENCE.match(text)
    return first["sentence"] if first else text


def without_long_listing(text: str) -> str:
    """`(type: Module, known subclasses: torch.nn.Module, torch.nn.Identity, ... 300 more)` -> `(..., 302 known
    subclasses)`: jsonargparse lists every imported subclass of a class-typed parameter."""
    known = _KNOWN.search(text)
    if known is None:
        return text
    count = len(known["paths"].split(", "))
    return text if count <= MAX_LISTED else f"{text[: known.start()]}, {count} known subclasses)"


class RunsHelpFormatter(DefaultHelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str:
        # jsonargparse's text: the option's own help, then what it adds: " (type: ..., default: ..., known ...)".
        text = super()._get_help_string(action)
        own = action.help or ""
        if own and text.startswith(own) and text != own:
            text = first_sentence(own) + text[len(own) :]
        return without_long_listing(text)

    def add_usage(self, usage, actions, *args, **kwargs) -> None:
        actions = list(actions)
        if usage is None and len(actions) > MAX_USAGE_OPTIONS:
            actions = [action for action in actions if not any("." in option for option in action.option_strings)]
        super().add_usage(usage, actions, *args, **kwargs)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        # A paragraph of option lines (the default classes' options in a description) is laid out already.
        fill = super()._fill_text
        return "\n\n".join(p if "\n  -" in p else fill(p, width, indent) for p in text.split("\n\n"))


class ReadableHelp:
    """A parser mixin (before the jsonargparse parser class): RunsHelpFormatter, also for the parsers jsonargparse
    builds of this class (`--model.help <class>`), and on `--help` the options of each class a top-level option
    builds by default (`--model`, `--data`), after the description."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", RunsHelpFormatter)
        super().__init__(*args, **kwargs)

    def format_help(self, *args, **kwargs) -> str:
        description = self.description
        sections = default_class_sections(self)
        if sections:
            self.description = "\n\n".join([*filter(None, [description]), *sections, DOCS_NOTE])
        try:
            return super().format_help(*args, **kwargs)
        finally:
            self.description = description


def default_class_sections(parser: ArgumentParser) -> list[str]:
    """One section per top-level option whose default is a class path: that class's options, as
    `--<key>.help <class>` prints them. Computed on --help only: a run never pays for it."""
    try:
        defaults = parser.get_defaults()
    except (argparse.ArgumentError, ValueError, TypeError):  # help never fails for want of this section
        return []
    sections = []
    for key, value in vars(defaults).items():
        if isinstance(value, Namespace) and isinstance(value.get("class_path"), str):
            chosen = value.class_path != getattr(parser, "class_defaults", {}).get(key, value.class_path)
            section = class_section(key, value.class_path, value.get("init_args"), parser.formatter_class, chosen)
            if section is not None:
                sections.append(section)
    return sections


def class_section(
    key: str, class_path: str, init_args: Namespace | None, formatter_class: type, chosen: bool = False
) -> str | None:
    """The class's options with the parser's defaults for them (a project's set_defaults, its recipe); `chosen`: the
    command chose it by class path in place of the project's default."""
    module, _, name = class_path.rpartition(".")
    options = ArgumentParser(add_help=False, usage=argparse.SUPPRESS, formatter_class=formatter_class)
    try:
        options.add_class_arguments(getattr(import_module(module), name), key, fail_untyped=False)
        options.set_defaults({f"{key}.{arg}": value for arg, value in vars(init_args or Namespace()).items()})
    except (ImportError, AttributeError, ValueError, TypeError):  # a class jsonargparse cannot read: no section
        return None
    lines = options.format_help().rstrip("\n").split("\n")[1:]  # after jsonargparse's title, the class's docstring
    if not lines:
        return None
    title = f"--{key} {class_path}, {'as chosen' if chosen else 'the default'} (--{key}.help <class> lists another"
    title += " class's options):"
    return "\n".join([title, *lines])
