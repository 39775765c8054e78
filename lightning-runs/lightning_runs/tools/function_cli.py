"""Every tool's entry: its function's parameters as options, parsed by the project's own parser."""

from collections.abc import Callable

from jsonargparse import ActionConfigFile

from lightning_runs.cli.parser import ProjectParser
from lightning_runs.console import program


def function_cli(function: Callable, args: list[str] | None, **given):
    """jsonargparse's `auto_cli(function, args, as_positional=False)`, with the parameters in `given` (the project's
    cli_main, its LightningModule class) passed as they are instead of read from the command line. A bad option or
    value is a UsageError of one line (the CLI's own parser), which the tool's `errors.main` turns into exit 2."""
    tool = function.__module__.rpartition(".")[2]  # each tool is named for its module: `python -m my_exp export`
    description = (function.__doc__ or "").partition("\n")[0]
    parser = ProjectParser(prog=f"{program()} {tool}", description=description)
    parser.concise = True  # this parser's errors are the ones users read; jsonargparse's nested ones keep its wording
    parser.add_argument(
        "--config", action=ActionConfigFile, help="Path to a configuration file in json or yaml format."
    )
    parser.add_function_arguments(function, as_group=False, as_positional=False, skip=set(given), sub_configs=True)
    config = parser.instantiate(parser.parse_args(args))
    config.pop("config", None)
    return function(**given, **config)
