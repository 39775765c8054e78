"""The package a stranger reads: subpackages by role that import each other in one direction only (imports inside
functions counted: they hide a cycle, they do not remove it), and importing any part of it changes nothing in the
process that imports it."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import lightning_runs

PACKAGE = Path(lightning_runs.__file__).parent
MAX_LINES = 300  # "files ≲ 250 lines": a file past this has two jobs


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(path: Path, known: dict[str, Path]) -> set[str]:
    """The library's modules `path` imports anywhere in it, `from a.b import c` as `a.b.c` where that is a module."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module for a in node.names
            }
    return {name for name in names if name in known}


def unit(module: str) -> str:
    """`lightning_runs.cli.parser` -> `cli`; a top-level module is its own unit: `errors`."""
    return module.split(".")[1] if module.count(".") else "lightning_runs"


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*path, node, nxt]
            if nxt not in state and (cycle := visit(nxt, [*path, node])):
                return cycle
        state[node] = "done"
        return None

    return next((cycle for node in sorted(graph) if node not in state and (cycle := visit(node, []))), None)


def test_subpackages_import_each_other_in_one_direction_only():
    known = modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        # The entry point hands each tool its turn (imported when chosen): the root above everything, not a part.
        if module == "lightning_runs":
            continue
        graph.setdefault(unit(module), set()).update(
            unit(other) for other in imported(path, known) if unit(other) not in (unit(module), "lightning_runs")
        )
    assert find_cycle(graph) is None, f"a cycle between subpackages: {' -> '.join(find_cycle(graph))}"


TOOLS = ("lightning_runs.tools", "lightning_runs.sweeps", "lightning_runs.export")  # beside the core, importing it


def core_imports_of_tools() -> set[tuple[str, str]]:
    known = modules()
    core = {module: path for module, path in known.items() if not module.startswith(TOOLS)}
    return {
        (module, other) for module, path in core.items() for other in imported(path, known) if other.startswith(TOOLS)
    }


def test_the_core_imports_no_tool():
    """Every module outside tools/, sweeps/ and export/, its imports inside functions counted."""
    assert core_imports_of_tools() == set()


def test_the_modules_of_a_subpackage_import_each_other_in_one_direction_only():
    known = modules()
    graph = {module: imported(path, known) - {module} for module, path in known.items() if module != "lightning_runs"}
    # A package's __init__ imports its own modules to name them; a module importing its sibling goes around it.
    graph = {m: {o for o in others if not (m.startswith(f"{o}.") and o.count("."))} for m, others in graph.items()}
    assert find_cycle(graph) is None, f"an import cycle: {' -> '.join(find_cycle(graph))}"


def test_every_subpackage_names_its_public_parts_and_every_file_keeps_to_one_job():
    for init in PACKAGE.glob("*/__init__.py"):
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init} says nothing of what its package holds"
    too_long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not too_long


# What a library must leave as it found it: YAML loading of other parsers, signal handlers, the excepthook, the
# logging levels, torch's global settings. Read before and after importing every module, in a fresh process.
PROCESS_STATE = """
import json, logging, signal, sys, warnings
import jsonargparse, torch, lightning  # lightning sets its own loggers to INFO as it is imported
from jsonargparse import get_loader
def state():
    return {
        "yaml": repr(get_loader("yaml")), "sigint": repr(signal.getsignal(signal.SIGINT)),
        "sigterm": repr(signal.getsignal(signal.SIGTERM)), "excepthook": repr(sys.excepthook),
        "levels": {name: logging.getLogger(name).level for name in ("", "lightning", "lightning.pytorch", "torch")},
        "dtype": str(torch.get_default_dtype()), "threads": torch.get_num_threads(),
        "grad": torch.is_grad_enabled(), "deterministic": torch.are_deterministic_algorithms_enabled(),
    }
before = state()
import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps([before, state()]))
"""


@pytest.mark.slow  # ~9 s: a fresh interpreter imports all 70-odd modules
def test_importing_any_part_of_the_library_changes_nothing_in_the_process():
    out = subprocess.run(
        [sys.executable, "-c", PROCESS_STATE, *modules()], capture_output=True, text=True, check=True
    ).stdout
    before, after = json.loads(out.splitlines()[-1])
    assert after == before


# What only the template has: its make targets, its folders, its example's command. A copy or another project
# installing the library has none of them, so no message, comment or docstring of the library may send anyone there.
TEMPLATE_ONLY = re.compile(
    r"`make [\w-]+|\bmake (?:install|train|test|runs|sweep|export|schema|completion|bench|lint|tensorboard|mlflow-ui)\b"
    r"|(?<![\w/.-])(?:project|configs|benchmarks|docs|notebooks|scripts|sweeps)/|tests/template|-m project\b"
)


def test_the_library_names_nothing_of_the_template():
    named = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if TEMPLATE_ONLY.search(line)
    ]
    assert named == []


def test_the_cli_and_the_data_parts_import_no_scikit_learn(modules_imported):
    """scikit-learn is 0.27 s of a start-up: only the seeds tool's baselines and a fold split import it, when called."""
    assert "lightning_runs.data" in modules_imported["cli and data"]
    assert "sklearn" not in modules_imported["cli and data"]


def test_the_package_says_it_is_typed():
    # PEP 561: type checkers read an installed package's annotations only where it holds py.typed (setuptools ships
    # it in the wheel and the sdist as package data).
    assert (PACKAGE / "py.typed").is_file()
