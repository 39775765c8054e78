"""What a config may have imported and built. While it parses, jsonargparse imports each dotted path a value names (a
class_path, a callable, a type), from a config file or the command line alike; instantiating, it calls a class_path
with its init_args, and a function passes for a class there: `class_path: os.system` with `init_args: {command:
...}` ran the command, then the refusal came. Here each path is judged before it is imported (its module's source
read, not run: `this.Zen` printed the Zen of Python first), and every class_path parsed must name a class before
anything is built. That the class has the expected base (a Callback in trainer.callbacks, an nn.Module as
model.network) jsonargparse checks as it parses, on the class then imported.
"""

import contextlib
import importlib
import inspect
import re
import sys
from collections.abc import Iterator

from jsonargparse import Namespace

from lightning_runs.checkpoints.class_paths import defines
from lightning_runs.errors import UsageError
from lightning_runs.private import value_imports_judged


class NotImported(ImportError):
    """A dotted value whose module does not define it: importing that module would only run its code. jsonargparse
    reads it as any failed import (the next type of a Union is tried; `test.csv` stays a file name), naming the key."""


# How parser.py finds the refusal inside jsonargparse's message, to say it alone.
NOT_IMPORTED = re.compile(r"(?P<module>[\w.]+) does not define (?P<name>\w+), so nothing was imported")


def judge_import(path: str) -> None:
    if defines(path) is False:
        module, _, name = path.rpartition(".")
        raise NotImported(
            f"{module or path} does not define {name}, so nothing was imported (its source read, not run)"
        )


@contextlib.contextmanager
def imports_judged() -> Iterator[None]:
    """Within (the CLI's parsing): no dotted value is imported before judge_import found it defined."""
    with value_imports_judged(judge_import):
        yield


def chosen_class(path: str, base: type) -> type | None:
    """The subclass of `base` that a class path of the command names (`--model`, a config's `data`), imported as the
    parse would import it, judged first (a package's `__init__` that re-exports it is read as defining it); None where
    it names none, or its module fails to import: the parse then says why, naming the option."""
    if defines(path) is not True:
        return None
    module, _, name = path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name, None)
    except Exception:  # whatever the module raises; the parse imports it again and words the error
        return None
    return found if isinstance(found, type) and issubclass(found, base) else None


def check_class_paths(config, key: str = "") -> None:
    """Every `class_path` under `config` (the parsed subcommand's: a jsonargparse Namespace, lists of them for
    trainer.callbacks) names a class, already imported by the parser; a function, a module or any other object is
    refused, in one line naming the option, before anything is instantiated."""
    if isinstance(config, list | tuple):
        for index, item in enumerate(config):
            check_class_paths(item, f"{key}[{index}]")
        return
    if not isinstance(config, Namespace | dict):
        return
    for name, value in (config if isinstance(config, dict) else vars(config)).items():
        inner = key if name == "init_args" else f"{key}.{name}".lstrip(".")  # options are named without init_args
        if name == "class_path" and isinstance(value, str):
            _check_names_class(f"--{key}.class_path", value)
        else:
            check_class_paths(value, inner)


def _check_names_class(option: str, path: str) -> None:
    found = _imported(path)
    if not isinstance(found, type):
        kind = "function" if inspect.isroutine(found) else type(found).__name__ if found is not None else "name"
        raise UsageError(
            f"{option} {path}: a {kind}, not a class; a class_path names a class (module.Class), built with its"
            " init_args"
        )


def _imported(path: str):
    """The object `path` names among the modules imported (`a.b.C.D`: attribute D of class C of module a.b), or None;
    nothing is imported here."""
    parts = path.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:depth]))
        if module is not None:
            found = module
            for part in parts[depth:]:
                found = getattr(found, part, None)
            return found
    return None
