"""The command line: RunsCLI (LightningCLI with run folders, resume and the checks), the options every run has
(run_options), its parser and one-line errors (parser, bounded), what a config may import and build (references),
its help (help), where a run goes (placement), what a resume keeps (resume), and the JSON Schema of its options
(schema)."""

from lightning_runs.cli.parser import ProjectParser
from lightning_runs.cli.runs_cli import RunsCLI

__all__ = ["ProjectParser", "RunsCLI"]
