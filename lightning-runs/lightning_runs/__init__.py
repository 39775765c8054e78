"""The machinery of a LightningCLI project: run folders, exact resume, clean stops, records, and the tools around it.

Each part is a Lightning part of its own (a callback, a checkpoint plugin, a logger, a strategy) that works in a plain
`Trainer(...)`; `lightning_runs.cli.RunsCLI` composes them. A project's entry point hands its `cli_main` to `main`.
"""

import importlib
import sys
from collections.abc import Callable

from lightning_runs import errors
from lightning_runs.console import set_program

TOOLS = ("export", "runs", "sweep", "seeds", "cv", "verify", "schema", "completion")
READERS = ("runs",)  # tools that only read files: they answer without importing torch, Lightning or the model


def reader_tool(package: str | None, args: list[str] | None = None) -> bool:
    """`python -m <package> runs ...` from the package's __main__.py, before it imports its cli.py: True if answered."""
    argv = sys.argv[1:] if args is None else list(args)
    if not argv or argv[0] not in READERS:
        return False
    set_program(package)
    module = importlib.import_module(f"lightning_runs.tools.{argv[0]}")
    errors.main(lambda: module.main(None, argv[1:]))
    return True


def main(cli_main: Callable, package: str | None, args: list[str] | None = None):
    """`python -m <package> <subcommand or tool> ...`: fit, validate, test and predict go to `cli_main`, each tool to
    `lightning_runs.tools.<name>.main(cli_main, args)`, imported only then (sweep needs Optuna)."""
    set_program(package)  # before anything prints: every message names `python -m <the owner's package>`
    argv = sys.argv[1:] if args is None else list(args)
    if argv and argv[0] in TOOLS:
        module = importlib.import_module(f"lightning_runs.tools.{argv[0]}")
        return errors.main(lambda: module.main(cli_main, argv[1:]))
    # No args when none were given: LightningCLI reads sys.argv itself, as DDP's launcher expects.
    return errors.main(lambda: cli_main(args))
