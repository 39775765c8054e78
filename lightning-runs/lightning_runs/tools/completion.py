"""`python -m <package> completion [--shell bash|zsh|tcsh] [--output FILE]`: tab completion of the subcommands, the
tools and every option of each subcommand (`fit --trainer.max_e<TAB>`), by shtab.

jsonargparse's own (`parser.get_completion_script("shtab-bash")`) walks every class an option may take: on a
LightningCLI it ran 14 minutes on two cores and ended in a RecursionError. Shells complete what a command offers by
its name, and that is what a person types; so shtab is given a plain argparse parser with the same subcommands and
option strings, and the values are left to the shell (file names) and the CLI's own one-line errors.
"""

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import shtab
from jsonargparse import capture_parser

from lightning_runs import TOOLS
from lightning_runs.atomic import write_atomically
from lightning_runs.console import program
from lightning_runs.messages import class_arguments
from lightning_runs.private import option_nargs, subcommand_parser
from lightning_runs.tools.function_cli import function_cli

TAKES_A_FILE = ("--config", "--ckpt_path")


def completion_parser(cli_main: Callable, prog: str) -> argparse.ArgumentParser:
    """A plain parser with the CLI's subcommands and options and the tools' names, for shtab to read."""
    main = capture_parser(cli_main, [])
    plain = argparse.ArgumentParser(prog=prog)
    commands = plain.add_subparsers(dest="command")
    for name in ("fit", "validate", "test", "predict"):
        command = commands.add_parser(name, help=f"{name} a LightningModule")
        parser = subcommand_parser(main, name)
        options = option_nargs(parser)
        # The default model's and data's arguments (`--model.lr`): jsonargparse resolves a class's options only once
        # its class path is known, so they are not among the parser's own.
        defaults = parser.get_defaults()
        for group in ("model", "data"):
            options |= {f"--{group}.{option}": 1 for option in class_arguments(defaults[group].class_path)}
        for option, takes in options.items():
            if option.startswith("--") and option != "--help":
                # One value each, or none for a flag: shtab's bash script cannot count an optional one ("?").
                flag = {"action": "store_true"} if takes == 0 else {"nargs": 1}
                action = command.add_argument(option, **flag)
                if option in TAKES_A_FILE:
                    action.complete = shtab.FILE
    for tool in TOOLS:
        commands.add_parser(tool, help=f"the {tool} tool")
    return plain


def completion(cli_main: Callable, shell: Literal["bash", "zsh", "tcsh"] = "bash", output: Path | None = None) -> str:
    """Prints the completion script for `shell` (or writes it to `output`), for the command named after the package
    (`pip install -e .` installs it; `python -m <package>` runs the same)."""
    prog = program().removeprefix("python -m ")
    script = shtab.complete(completion_parser(cli_main, prog), shell)
    if output is None:
        print(script)
    else:
        write_atomically(output, script.encode())
        print(f"wrote {output}: `source {output}` (in ~/.bashrc, say), then `{prog} fit --trainer.<TAB>` completes")
    return script


def main(cli_main: Callable, args: list[str]) -> str:
    return function_cli(completion, args, cli_main=cli_main)
