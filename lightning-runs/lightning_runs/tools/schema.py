"""`python -m <package> schema [--output FILE]`: the JSON Schema of the CLI's config files (`fit --config FILE`), for
an editor to check and complete them as they are written (lightning_runs/cli/schema.py says what it checks)."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from lightning_runs.atomic import write_output
from lightning_runs.tools.function_cli import function_cli
from lightning_runs.tools.schema_of import subcommand_schema


def write_schema(
    cli_main: Callable, subcommand: Literal["fit", "validate", "test", "predict"] = "fit", output: Path | None = None
) -> dict:
    """Writes the JSON Schema of `<subcommand> --config` files to `output` (none: prints it)."""
    schema = subcommand_schema(cli_main, subcommand)
    if output is None:
        print(json.dumps(schema, indent=2))
        return schema
    write_output(output, json.dumps(schema, indent=2) + "\n", lambda head: b'"$schema"' in head, "schema")
    print(
        f"wrote {output}: a config file with the line `# yaml-language-server: $schema=<its path to {output.name}>`"
        " is checked against it by VS Code's YAML extension (any editor using yaml-language-server)"
    )
    return schema


def main(cli_main: Callable, args: list[str]) -> dict:
    return function_cli(write_schema, args, cli_main=cli_main)
