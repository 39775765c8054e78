"""Whether a dotted name read from an untrusted file (a checkpoint's hyperparameters) names a class, decided without
importing anything: importing a module runs its code (`this.Zen` would print the Zen of Python before any check
could refuse it). Only modules already imported are looked into; of the others only the source is read.

Not jsonargparse's import-path lists (set_parsing_settings(import_path_denylist=..., import_path_allowlist=...),
jsonargparse 4.53.0): they check a name before importing it, but the default denylist lacks `this` (imported, the Zen
printed, before the refusal), and only `*` with an allowlist refuses first; that setting is process-wide, so it would
refuse the class paths of the owner's own configs as well as a checkpoint's."""

import ast
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import sys
import types
import typing
from pathlib import Path

# Parameters of these types keep a string as it is: a dotted value there ("test.csv") is data, not a reference.
# Any other parameter (a Callable, a class, Any) would have jsonargparse import what the string names.
PLAIN_TYPES = (str, bytes, int, float, bool, os.PathLike, type(None))


def names_class(dotted: str) -> bool | None:
    """True if `module.Name` is a class; False if it is something else, or a module that cannot be read without
    running it (compiled, or a namespace package); None if no such module exists here, so nothing could run."""
    module_name, _, name = dotted.rpartition(".")
    if not module_name:
        return False  # a bare name is no class path
    if module_name in sys.modules:
        return isinstance(getattr(sys.modules[module_name], name, None), type)
    spec = _find_without_importing(module_name)
    if spec is None:
        return None
    if not (spec.origin or "").endswith(".py"):
        return False
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8", errors="replace"))
    return any(isinstance(node, ast.ClassDef) and node.name == name for node in tree.body)


def imported_class(dotted: str | None) -> type | None:
    """The class `dotted` names if its module is already imported, else None."""
    if not isinstance(dotted, str) or "." not in dotted:
        return None
    module_name, _, name = dotted.rpartition(".")
    found = getattr(sys.modules.get(module_name), name, None)
    return found if isinstance(found, type) else None


def import_named_class(dotted: str | None, base: type) -> type | None:
    """The subclass of `base` that `dotted` names, imported only once `names_class` found it a class (a checkpoint's
    `_class_path`, say); None where it names no such class, nothing having run."""
    if not isinstance(dotted, str) or names_class(dotted) is not True:
        return None
    module_name, _, name = dotted.rpartition(".")
    found = getattr(importlib.import_module(module_name), name, None)
    return found if isinstance(found, type) and issubclass(found, base) else None


def plain_parameters(cls: type | None) -> frozenset[str]:
    """Names of `cls.__init__`'s parameters typed as plain data, through its bases too (a subclass's **kwargs
    reach them)."""
    names = set()
    for klass in inspect.getmro(cls) if cls is not None else ():
        init = klass.__dict__.get("__init__")
        try:
            hints = typing.get_type_hints(init) if init is not None else {}
        except Exception:  # an annotation that does not resolve: treat its parameters as references
            continue
        for name, hint in hints.items():
            union = typing.get_origin(hint) in (typing.Union, types.UnionType)
            members = typing.get_args(hint) if union else (hint,)
            if all(isinstance(t, type) and issubclass(t, PLAIN_TYPES) for t in members):
                names.add(name)
    return frozenset(names)


def _find_without_importing(module_name: str) -> importlib.machinery.ModuleSpec | None:
    """The module's spec. importlib.util.find_spec would import the parent packages of a dotted name, running their
    __init__.py; here each level is searched in the folders of the one above."""
    spec, search_path = None, None
    parts = module_name.split(".")
    for depth in range(1, len(parts) + 1):
        prefix = ".".join(parts[:depth])
        if prefix in sys.modules:
            spec, search_path = sys.modules[prefix].__spec__, getattr(sys.modules[prefix], "__path__", None)
            continue
        if depth == 1:
            spec = importlib.util.find_spec(prefix)  # a top-level name is found without being imported
        elif search_path is not None:
            spec = importlib.machinery.PathFinder.find_spec(prefix, list(search_path))
        else:
            return None  # the parent is a module, not a package
        if spec is None:
            return None
        search_path = spec.submodule_search_locations
    return spec
