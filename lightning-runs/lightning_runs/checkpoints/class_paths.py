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
    kinds = _defined_in_source(module_name)
    return None if kinds is None else kinds.get(name) == "class"


def defines(dotted: str) -> bool | None:
    """Whether importing `module.Name` could give anything: True if the module is imported and has it, or its source
    binds the name at top level (a class, a function, an assignment, an import: `torch.optim.Adam` is re-exported);
    False if it does not (`this.Zen`: importing `this` prints the Zen and gives no Zen), or the module cannot be read
    without running it; None if no such module exists here. `a.b.C` whose `a.b` is a class: `a` must define `b`."""
    module_name, _, name = dotted.rpartition(".")
    if not module_name:
        return False
    if module_name in sys.modules:
        return hasattr(sys.modules[module_name], name)
    kinds = _defined_in_source(module_name)
    if kinds is None:  # no such module; `a.b` may still be an attribute of `a` (jsonargparse tries that next)
        return defines(module_name) if "." in module_name else None
    return name in kinds or "*" in kinds or "__getattr__" in kinds  # a star import or a lazy module may give it


def _defined_in_source(module_name: str) -> dict[str, str] | None:
    """The names a module's source binds at top level, each `class` or `other`, read without importing it; {} for a
    module that cannot be read so (compiled, a namespace package); None if no such module exists."""
    spec = _find_without_importing(module_name)
    if spec is None:
        return None
    if not (spec.origin or "").endswith(".py"):
        return {}
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8", errors="replace"))
    kinds, nodes = {}, list(tree.body)
    while nodes:  # the module's statements, and those under its top-level if/try/with (never a def's or a class's)
        node = nodes.pop()
        if isinstance(node, ast.If | ast.Try | ast.With):
            nodes += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            nodes += [part for handler in getattr(node, "handlers", []) for part in handler.body]
        elif isinstance(node, ast.ClassDef):
            kinds[node.name] = "class"
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kinds[node.name] = "other"
        elif isinstance(node, ast.Import | ast.ImportFrom):
            kinds |= {(alias.asname or alias.name).partition(".")[0]: "other" for alias in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            kinds |= {target.id: "other" for target in targets if isinstance(target, ast.Name)}
    return kinds


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
