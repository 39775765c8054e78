"""The machinery of a LightningCLI project: run folders, exact resume, clean stops, records, and the tools around it.

Each part is a Lightning part of its own (a callback, a checkpoint plugin, a logger, a strategy) that works in a plain
`Trainer(...)`; `lightning_runs.cli.RunsCLI` composes them. A project's entry point hands its `cli_main` to `main`.
"""

import gc
import importlib
import sys
from collections.abc import Callable

from lightning_runs import errors
from lightning_runs.console import set_program

TOOLS = ("export", "runs", "sweep", "seeds", "cv", "verify", "schema", "completion")
READERS = ("runs",)  # tools that only read files: they answer without importing torch, Lightning or the model


def reader_tool(package: str | None, args: list[str] | None = None) -> bool:
    """`python -m <package> runs ...` from the package's __main__.py, before it imports its cli.py: True if answered.
    Otherwise the garbage collector waits for `main`, which freezes what the imports made."""
    argv = sys.argv[1:] if args is None else list(args)
    if not argv or argv[0] not in READERS:
        # torch's and Lightning's imports make millions of objects that live as long as the process; the collector
        # walked them all again and again as they came: 40% of the imports' CPU (4.9 s to 2.9 s here).
        gc.disable()
        return False
    main(None, package, argv)  # ty: ignore[invalid-argument-type]  # a reader tool never calls cli_main
    return True


def main(cli_main: Callable, package: str | None, args: list[str] | None = None):
    """`python -m <package> <subcommand or tool> ...`: fit, validate, test and predict go to `cli_main`, each tool to
    `lightning_runs.tools.<name>.main(cli_main, args)`, imported only then (sweep needs Optuna)."""
    set_program(package)  # before anything prints: every message names `python -m <the owner's package>`
    # What the imports made (torch, Lightning, the owner's code) lives as long as the process: frozen, the collector
    # stops walking it (a full collection took 0.1-0.45 s). Once a process: a later call (a notebook's, a test's) would
    # freeze the garbage of the runs before it.
    if not gc.get_freeze_count():
        gc.freeze()
    gc.enable()
    argv = sys.argv[1:] if args is None else list(args)
    if argv and argv[0] in TOOLS:
        module = importlib.import_module(f"lightning_runs.tools.{argv[0]}")
        return errors.main(lambda: module.main(cli_main, argv[1:]))
    # No args when none were given: LightningCLI reads sys.argv itself, as DDP's launcher expects.
    return errors.main(lambda: cli_main(args))
