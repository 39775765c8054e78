"""Every tool's entry: its function's parameters as options (jsonargparse's own), errors as one line."""

import inspect
import sys
from collections.abc import Callable
from pathlib import Path

from jsonargparse import ActionConfigFile, ArgumentError, ArgumentParser, set_parsing_settings

from lightning_runs.atomic import write_atomically
from lightning_runs.cli.help import RunsHelpFormatter
from lightning_runs.console import program
from lightning_runs.errors import UsageError
from lightning_runs.messages import condensed
from lightning_runs.private import print_config_deferred, print_config_if_requested


def function_cli(function: Callable, args: list[str] | None, **given):
    """jsonargparse's `auto_cli(function, args)`, with the parameters in `given` (the project's cli_main) passed as
    they are instead of read from the command line. A function with an `args` parameter (the tools that start fits:
    cv, sweep, seeds) takes `fit`'s options as `fit` does: each option that is not the function's, with its value,
    goes to `args` (`cv --folds 5 --model.lr 0.003`)."""
    args, fit = _split(sys.argv[1:] if args is None else args, set(inspect.signature(function).parameters) - set(given))
    set_parsing_settings(import_path_denylist=[])  # jsonargparse's denylist enforced, as RunsCLI does
    tool = function.__module__.rpartition(".")[2]  # each tool is named for its module: `python -m my_exp export`
    parser = ArgumentParser(
        prog=f"{program()} {tool}", description=(function.__doc__ or "").partition("\n")[0], exit_on_error=False,
        allow_abbrev=False, formatter_class=RunsHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--config", action=ActionConfigFile, help="A YAML file of these options.")
    parser.add_function_arguments(function, as_group=False, skip=set(given), sub_configs=True)
    try:
        with print_config_deferred():  # printed once fit's options are among the args
            config = parser.parse_args(args)
        if fit:
            config["args"] = [*config["args"], *fit]
        print_config_if_requested(parser, config)
        config = parser.instantiate_classes(config)
    except ArgumentError as error:
        raise UsageError(condensed(error, parser)) from None
    config.pop("config", None)
    return function(**given, **config)


def _split(args: list[str], own: set[str]) -> tuple[list[str], list[str]]:
    """(the function's options, fit's): an option is the function's by its first name (`--space.model.lr`: space); a
    value given apart (`--model.lr 0.003`) goes with the option before it."""
    if "args" not in own:
        return args, []
    own |= {"config", "print_config", "help"}
    mine, fit, side = [], [], None
    for arg in args:
        if arg.startswith("--") or arg == "-h":
            side = mine if arg == "-h" or arg[2:].partition("=")[0].partition(".")[0] in own else fit
        (mine if side is None else side).append(arg)
    return mine, fit


def write_output(path: Path, content: bytes | str, mine: Callable[[bytes], bool], tool: str) -> None:
    """A tool's `--output`: written as write_atomically writes, where `path` is new or holds what the tool writes
    (check_output); a folder passes to write_atomically, whose OSError the entry point words."""
    check_output(path, mine, tool)
    write_atomically(Path(path), content)


def check_output(path: Path | None, mine: Callable[[bytes], bool], tool: str) -> None:
    """An `--output` that is new or holds what the tool writes (`mine` of its first 4 KB: a mark its output carries);
    any other file (a README, a config, a checkpoint) is refused, never replaced. A tool checks it before its work."""
    path = Path(path) if path is not None else None
    if path is not None and path.exists() and not path.is_dir():
        head = b""
        if path.is_file():  # not a FIFO or a device: never read
            with path.open("rb") as file:
                head = file.read(4096)
        if not mine(head):
            raise UsageError(f"--output {path}: a file {tool} did not write; give a new file, or move that one away")
