"""Class paths read from data (a checkpoint's hyperparameters, a run's config.yaml) name installed or imported code
only, never a module of the working directory: `runs.<x>.payload.Evil` with a payload.py put in the runs tree ran on
export, test and from a run's config, before Lightning's own guard (`python -m` puts the working directory on
sys.path)."""

import importlib.machinery
import re
import sys
from pathlib import Path

from lightning_runs.errors import UsageError

DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")  # what jsonargparse would import: a class path, a callable's
SOURCES = (*importlib.machinery.all_suffixes(), "/__init__.py")  # a module (.py, .pyc, extensions), a package


def refuse_local_code(data, source: Path) -> None:
    """Every string in `data` (nested mappings and lists) that reads as an import path, its top module not imported yet,
    names no module or package under the working directory where that is on sys.path."""
    here = Path.cwd().resolve()
    if not any(Path(entry or ".").resolve() == here for entry in sys.path):
        return
    for dotted in _strings(data):
        folder = here
        for part in dotted.split("."):  # as the import would walk it (a data file's name `data.npz` names no code)
            code = [folder / f"{part}{suffix}" for suffix in SOURCES if (folder / f"{part}{suffix}").is_file()]
            if code:
                raise UsageError(
                    f"{source}: names {dotted}, code in the working directory ({code[0].relative_to(here)}); a class"
                    " path read from a checkpoint or a run's config is imported only from installed packages: pip"
                    " install it, or remove it"
                )
            folder = folder / part
            if not folder.is_dir():
                break


def _strings(data):
    """The strings in `data` that read as import paths of a module not imported yet."""
    if isinstance(data, dict):
        data = list(data.values())
    if isinstance(data, list | tuple):
        for value in data:
            yield from _strings(value)
    elif isinstance(data, str) and DOTTED.fullmatch(data) and data.partition(".")[0] not in sys.modules:
        yield data
