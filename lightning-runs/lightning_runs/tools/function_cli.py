"""Every tool's entry: its function's parameters as options (jsonargparse's own), errors as one line."""

import contextlib
import io
from collections.abc import Callable

import yaml
from jsonargparse import ActionConfigFile, ArgumentError, ArgumentParser, set_parsing_settings

from lightning_runs.cli.help import RunsHelpFormatter
from lightning_runs.console import program
from lightning_runs.errors import UsageError
from lightning_runs.messages import condensed


def function_cli(function: Callable, args: list[str] | None, **given):
    """jsonargparse's `auto_cli(function, args)`, with the parameters in `given` (the project's cli_main) passed as
    they are instead of read from the command line."""
    set_parsing_settings(import_path_denylist=[])  # jsonargparse's denylist enforced, as RunsCLI does
    tool = function.__module__.rpartition(".")[2]  # each tool is named for its module: `python -m my_exp export`
    parser = ArgumentParser(
        prog=f"{program()} {tool}", description=(function.__doc__ or "").partition("\n")[0], exit_on_error=False,
        allow_abbrev=False, formatter_class=RunsHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--config", action=ActionConfigFile, help="A YAML file of these options.")
    parser.add_function_arguments(function, as_group=False, skip=set(given), sub_configs=True)
    try:
        config = parser.instantiate_classes(parser.parse_args(args))
    except ArgumentError as error:
        raise UsageError(condensed(error, parser)) from None
    config.pop("config", None)
    return function(**given, **config)


def fit_config(cli_main: Callable, recipe: tuple[str, ...]) -> dict:
    """The fit's config as the CLI resolves it, the run's name included (`fit --print_config` prints it and exits
    before anything is built): what a tool that starts fits (sweep, cv) reads; a bad config or option is refused as
    the fit would refuse it."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            cli_main(["fit", *recipe, "--print_config"])
    except SystemExit as exit:
        if exit.code not in (0, None):  # a bad config or option: its error is already on stderr
            raise
    return yaml.safe_load(printed.getvalue()) or {}
