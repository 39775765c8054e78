"""The command line: RunsCLI (a LightningCLI composing the library's parts), the parts it offers (parts), which run a
command is (placement), its errors as one line (messages) and its help (help)."""

from lightning_runs.cli.parts import set_part_defaults
from lightning_runs.cli.runs_cli import RunsCLI

__all__ = ["RunsCLI", "set_part_defaults"]
