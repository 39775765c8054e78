"""Class paths read from data (a checkpoint's hyperparameters, a run's config.yaml) name no code dropped in a folder of
the working directory: `runs.<x>.payload.Evil` with a payload.py put in the runs tree ran on export, test and from a
run's config, before Lightning's own guard (`python -m` puts the working directory on sys.path). Installed packages,
modules already imported, and the project's own top-level modules and packages (`my_models.py`) are imported; a
module reached through a folder without `__init__.py` is not.
"""

import importlib.machinery
import json
import re
import sys
from pathlib import Path

from lightning_runs.errors import UsageError

# A string that reads as an import path (a class path, a callable's name): what jsonargparse would import.
DOTTED = re.compile(r'"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)"')
SOURCES = (*importlib.machinery.all_suffixes(), "/__init__.py")  # a module (.py, .pyc, extensions), a package


def refuse_local_code(data, source: Path) -> None:
    """Every string in `data` that reads as an import path, its top module not imported yet, names no module reached
    through a plain folder (no `__init__.py`) of the working directory, where that is on sys.path."""
    here = Path.cwd().resolve()
    if not any(Path(entry or ".").resolve() == here for entry in sys.path):
        return
    for dotted in DOTTED.findall(json.dumps(data, default=str)):
        parts = dotted.split(".")
        for i in range(len(parts) if parts[0] not in sys.modules else 0):  # as an import walks it; `data.npz`: no code
            code = [here.joinpath(*parts[:i], parts[i] + suffix) for suffix in SOURCES]
            found = next((path for path in code if path.is_file()), None)
            if found and i:
                raise UsageError(
                    f"{source}: names {dotted}, code in a folder of the working directory ({found.relative_to(here)});"
                    " a class path read from a checkpoint or a run's config is imported from installed packages and the"
                    " project's own modules only: install it, or remove it"
                )
            if found:
                break
