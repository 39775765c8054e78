"""`python -m <package> schema [--output FILE]`: the JSON Schema of the CLI's config files (`fit --config FILE`), for
an editor to check and complete them as they are written.

jsonargparse 4.53 has one of its own (`--print_completion jsonschema`, `parser.get_completion_script("jsonschema")`),
but on a LightningCLI it fails ("unbound method type.__subclasses__() needs an argument": a parameter whose default is
a class, so whose inferred type is a metaclass, among the arguments of one of the imported Callback subclasses), and
it would describe every imported subclass of each class-typed option with all their arguments (748 `nn.Module`s).
This one is built from the parser's options: each key with its type, the arguments of each class an option builds
by default (`--model`, `--data`, `--model.network`, the logger) checked as well; another class named by class path
is left for the parser to check. Value restrictions (PositiveInt's > 0) are the parser's too: types only.
"""

import enum
import json
import os
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal

from jsonargparse import ArgumentParser, Namespace, capture_parser

from lightning_runs.console import program
from lightning_runs.messages import class_parser
from lightning_runs.private import subcommand_parser, typed_options
from lightning_runs.tools.function_cli import check_output, function_cli, write_output

DRAFT = "https://json-schema.org/draft/2020-12/schema"
ANYTHING: dict = {}
_PRIMITIVES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"))
# typing's aliases have these as their origin (typing.Sequence[str] and typing.Sequence: collections.abc.Sequence).
_ARRAYS = (list, tuple, set, frozenset, Sequence, Iterable)


def subcommand_schema(cli_main: Callable, subcommand: str = "fit") -> dict:
    """The schema of `<subcommand> --config` files of the CLI that `cli_main(args)` builds (built, nothing parsed)."""
    parser = subcommand_parser(capture_parser(cli_main, [subcommand]), subcommand)
    return {"$schema": DRAFT, "title": f"{program()} {subcommand} --config", **options_schema(parser)}


def options_schema(parser: ArgumentParser) -> dict:
    root = _object()
    root["properties"]["$schema"] = {"type": "string", "description": "the schema editors check this file with"}
    groups = []
    for key, hint, default, help_text, group in typed_options(parser):
        *parents, name = key.split(".")
        node = root
        for parent in parents:
            node = node["properties"].setdefault(parent, _object())
        if group:
            node["properties"].setdefault(name, _object())
            groups.append((node, name))
        else:
            node["properties"][name] = _described(type_schema(hint, default), default, help_text)
    for node, name in groups:  # a group's key also takes the path of a config file holding its values
        node["properties"][name] = {"anyOf": [{"type": "string"}, node["properties"][name]]}
    return root


def type_schema(hint, default=None) -> dict:
    """JSON Schema of the values jsonargparse accepts for a type hint, or ANYTHING where it cannot say."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is None or hint is type(None):
        return {"type": "null"}
    if origin in (typing.Union, types.UnionType):
        members = [type_schema(arg, default) for arg in args]
        return ANYTHING if ANYTHING in members else {"anyOf": members}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in _ARRAYS or hint in _ARRAYS:
        fixed = origin in (tuple, typing.Tuple) and args and args[-1] is not Ellipsis  # noqa: UP006
        items = [type_schema(arg) for arg in args if arg is not Ellipsis]
        if fixed:
            return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
        return {"type": "array", "items": items[0]} if items else {"type": "array"}
    if origin is dict or hint is dict:
        return {"type": "object"}
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return {"enum": list(hint.__members__)}
        for base, name in _PRIMITIVES:  # jsonargparse's PositiveInt is an int, PositiveFloat a float
            if issubclass(hint, base):
                return {"type": name}
        if issubclass(hint, os.PathLike) or hint.__module__.startswith("jsonargparse"):  # pathlib, jsonargparse's
            return {"type": "string"}
    if isinstance(default, (dict, Namespace)) and isinstance(default.get("class_path"), str):
        return default_class_schema(default["class_path"])  # a class (or a factory of one) built by default
    return ANYTHING


def default_class_schema(class_path: str) -> dict:
    """A class chosen by class path, this one by default: its name or path, its arguments (beside class_path or in
    init_args), or another class path, whose arguments the parser checks."""
    parser = class_parser(class_path)
    if parser is None:  # a class jsonargparse cannot read: no checks
        return ANYTHING
    own = options_schema(parser)
    del own["properties"]["$schema"]
    named = {"enum": [class_path, class_path.rpartition(".")[2]]}
    spec = {"class_path": named, "init_args": own, "dict_kwargs": {"type": "object"}}
    default = {**own, "properties": {**own["properties"], **spec}}
    another = {"type": "string", "not": named}
    other = {"type": "object", "properties": {"class_path": another}, "required": ["class_path"]}
    return {"anyOf": [{"type": "string"}, default, other]}


def _object() -> dict:
    return {"type": "object", "properties": {}, "additionalProperties": False}


def _described(schema: dict, default, help_text: str | None) -> dict:
    schema = dict(schema)
    if help_text:
        schema["description"] = help_text.strip().split(". ")[0]
    if isinstance(default, (bool, int, float, str)):  # None: unset as often as null
        schema["default"] = default
    return schema


def write_schema(
    cli_main: Callable, subcommand: Literal["fit", "validate", "test", "predict"] = "fit", output: Path | None = None
) -> dict:
    """Writes the JSON Schema of `<subcommand> --config` files to `output` (none: prints it)."""
    check_output(output, _written_here, "schema")  # before the schema's build (~0.5 s)
    schema = subcommand_schema(cli_main, subcommand)
    if output is None:
        print(json.dumps(schema, indent=2))
        return schema
    write_output(output, json.dumps(schema, indent=2) + "\n", _written_here, "schema")
    print(
        f"wrote {output}: a config file with the line `# yaml-language-server: $schema=<its path to {output.name}>`"
        " is checked against it by VS Code's YAML extension (any editor using yaml-language-server)"
    )
    return schema


def main(cli_main: Callable, args: list[str]) -> dict:
    return function_cli(write_schema, args, cli_main=cli_main)


def _written_here(head: bytes) -> bool:
    return b'"$schema"' in head
