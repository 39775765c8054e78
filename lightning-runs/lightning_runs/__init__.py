"""The machinery of a LightningCLI project: run folders, checkpoints and resume, fault handling, logging extras,
summaries, and the tools around the CLI (lightning_runs.tools).

Nobody should need to edit this package to train their own model or data: those are the project's own files, and
what the machinery reads of them is docs/contract.md. A project's entry point hands its `cli_main` and LightningModule
class to `main` below.
"""

import sys
from collections.abc import Callable

from lightning_runs import errors
from lightning_runs.console import set_program

TOOLS = ("export", "runs", "sweep", "seeds", "schema")


def main(cli_main: Callable, model_class: type, args: list[str] | None = None):
    """`python -m <package> <subcommand or tool> ...`: fit, validate, test and predict go to the project's LightningCLI
    (`cli_main`), export, runs, sweep, seeds and schema to the tool of that name (imported only then: sweep needs
    Optuna)."""
    set_program(model_class)  # before anything prints: every message names `python -m <the owner's package>`
    argv = sys.argv[1:] if args is None else list(args)
    tool, rest = (argv[0], argv[1:]) if argv else (None, [])
    if tool == "export":
        from lightning_runs.tools import export

        return export.main(model_class, rest)
    if tool == "runs":
        from lightning_runs.tools import runs

        return runs.main(rest)
    if tool == "sweep":
        from lightning_runs.tools import sweep

        return sweep.main(cli_main, rest)
    if tool == "seeds":
        from lightning_runs.tools import seeds

        return seeds.main(cli_main, rest)
    if tool == "schema":
        from lightning_runs.tools import schema

        return schema.main(cli_main, rest)
    # No args for the CLI when none were given: LightningCLI reads sys.argv itself, as DDP's launcher expects.
    return errors.main(lambda: cli_main(args))
