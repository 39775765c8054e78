"""The machinery of a LightningCLI project: run folders, checkpoints and resume, fault handling, logging extras,
summaries, and the tools around the CLI (lightning_runs.tools).

Nobody should need to edit this package to train their own model or data: those are the project's own files, and
what the machinery reads of them is lightning_runs.contract. A project's entry point hands its `cli_main` and
LightningModule class to `main` below.
"""

import importlib
import sys
from collections.abc import Callable

from lightning_runs import errors
from lightning_runs.console import set_package, set_program

TOOLS = ("export", "runs", "sweep", "seeds", "schema", "completion")
# The tools that only read files: they answer without importing torch, Lightning or the owner's model (a second
# or more, before anything is printed).
READERS = ("runs",)


def reader_tool(package: str, args: list[str] | None = None) -> bool:
    """`python -m <package> runs ...` from the package's __main__.py, before it imports its cli.py: True once the
    tool has answered; False for any other command, which the CLI then runs (`main` below)."""
    argv = sys.argv[1:] if args is None else list(args)
    if not argv or argv[0] not in READERS:
        return False
    set_package(package)
    module = importlib.import_module(f"lightning_runs.tools.{argv[0]}")
    errors.main(lambda: module.main(argv[1:]))
    return True


def main(cli_main: Callable, model_class: type, args: list[str] | None = None):
    """`python -m <package> <subcommand or tool> ...`: fit, validate, test and predict go to the project's LightningCLI
    (`cli_main`), each tool to `lightning_runs.tools.<name>.main`, imported only then (sweep needs Optuna). Every one
    enters through `errors.main`, the one place that turns an error into an exit code."""
    set_program(model_class)  # before anything prints: every message names `python -m <the owner's package>`
    argv = sys.argv[1:] if args is None else list(args)
    tool, rest = (argv[0], argv[1:]) if argv else (None, [])
    if tool in TOOLS:
        module = importlib.import_module(f"lightning_runs.tools.{tool}")
        # What each tool is handed: the CLI it runs (sweep, seeds, schema, completion), the module class (export).
        handed = {"export": (model_class,), "runs": ()}.get(tool, (cli_main,))
        return errors.main(lambda: module.main(*handed, rest))
    # No args for the CLI when none were given: LightningCLI reads sys.argv itself, as DDP's launcher expects.
    return errors.main(lambda: cli_main(args))
