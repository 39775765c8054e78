"""Where a run came from: its resolved config and a hash of it, seeds, git commit, package versions, device."""

import importlib.metadata
import importlib.util
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

import torch
from lightning.pytorch.cli import SaveConfigCallback

from lightning_runs.atomic import write_atomically
from lightning_runs.folders.layout import run_folder
from lightning_runs.folders.recipes import flatten

PACKAGES = ("torch", "torchvision", "lightning", "torchmetrics", "numpy", "scikit-learn", "jsonargparse", "tensorboard")
PACKAGES += ("mlflow", "wandb")  # the `loggers` extra: None where it is not installed


class SaveConfigInRun(SaveConfigCallback):
    """LightningCLI's config saving, into the run folder of whichever logger the run has.

    Lightning's saves into `Trainer.log_dir`, which for an MLflow or W&B logger is its `save_dir`: runs/config.yaml
    for every run (the second one refuses to overwrite it), or an AssertionError where that is None (Lightning #19441).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs, save_to_log_dir=False)

    def save_config(self, trainer, pl_module, stage: str) -> None:  # rank zero only
        folder = run_folder(trainer) or Path(trainer.default_root_dir)  # no logger: where Lightning's would write
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / self.config_filename
        if self.multifile:  # a config of several files: jsonargparse writes them all
            self.parser.save(self.config, path, skip_none=False, overwrite=self.overwrite, multifile=True)
            return
        if path.exists() and not self.overwrite:
            raise ValueError(f"Refusing to overwrite existing file: {path}")  # as parser.save says it
        # Whole or absent: jsonargparse's save opens (empties) the file before it dumps the config, and a run starting
        # at the same moment that reads it then (folders/naming.py) takes this folder for one of other data.
        write_atomically(path, self.parser.dump(self.config, skip_none=False))


def saved_config_path(trainer) -> Path | None:
    """The resolved config as LightningCLI saved it in the run directory (config.yaml, or config.test.yaml
    and the like for later commands), or None outside the CLI. Rank zero, after setup."""
    callback = next((c for c in trainer.callbacks if isinstance(c, SaveConfigCallback)), None)
    folder = run_folder(trainer)
    if callback is None or folder is None or not (folder / callback.config_filename).is_file():
        return None
    return folder / callback.config_filename


def saved_config(trainer) -> str | None:
    path = saved_config_path(trainer)
    return None if path is None else path.read_text()


def seeds(config: dict | None) -> dict:
    if config is None:
        return {"seed_everything": os.environ.get("PL_GLOBAL_SEED")}
    # `data.init_args.seed` reads as `data.seed`: the class-path wrapping is how the config is stored, not a name.
    flat = {k.replace(".init_args.", "."): v for k, v in flatten(config).items()}
    return {k: v for k, v in flat.items() if k == "seed_everything" or k.endswith(".seed")}


def code_folders(package: str) -> list[Path]:
    """Where to ask git for the commit of the code that ran, in order: the folder of the owner's package (`__main__`:
    the script run as `python train.py`), then the working directory. The package's folder is in their project's
    checkout wherever the environment is (a conda or shared one lies outside it); where the package is installed
    rather than checked out, the working directory is the best guess left."""
    if package == "__main__":
        location = getattr(sys.modules["__main__"], "__file__", None)
    else:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):  # ValueError: a module in sys.modules without a spec
            spec = None
        if spec is not None and spec.submodule_search_locations:  # a package: its folder
            location = next(iter(spec.submodule_search_locations), None)
        else:  # a single module, or nothing found
            location = spec and spec.origin
    if not location:
        return [Path.cwd()]
    found = Path(location).resolve()
    return [found if found.is_dir() else found.parent, Path.cwd()]


def git_state(*folders: Path) -> dict:
    """The commit of the code that ran (the repository of the first of `folders` inside one), and whether it differed
    from that commit: a tracked file changed, or a Python file in that folder (the owner's package) not yet added, as a
    new module a user's config names is at first. An untracked scratch file (my_run.yaml, a data file) changes no
    code that ran."""
    for folder in folders:
        git = ["git", "-C", str(folder)]
        try:
            commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
            if commit.returncode != 0:  # not a repository: an installed package, a folder outside any checkout
                continue
            changed = [*git, "status", "--porcelain", "--untracked-files=no"]
            new_code = [*git, "ls-files", "--others", "--exclude-standard", "--", "*.py"]
            dirty = any(
                subprocess.run(c, capture_output=True, text=True, timeout=10).stdout.strip()
                for c in (changed, new_code)
            )
        except (OSError, subprocess.SubprocessError):  # no git, or too slow
            return {"commit": None, "dirty": None}
        return {"commit": commit.stdout.strip(), "dirty": dirty}
    return {"commit": None, "dirty": None}


def versions() -> dict:
    found = {"python": platform.python_version(), "cuda": torch.version.cuda}
    for package in PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    found["torch"] = torch.__version__  # with its build: +cu130, +cpu
    return found


def device(trainer) -> dict:
    root = trainer.strategy.root_device
    return {
        "accelerator": type(trainer.accelerator).__name__,
        "strategy": type(trainer.strategy).__name__,
        "precision": trainer.precision,
        "world_size": trainer.world_size,
        "num_nodes": trainer.num_nodes,
        "name": torch.cuda.get_device_name(root) if root.type == "cuda" else platform.processor() or platform.machine(),
        "host": socket.gethostname(),
        "platform": platform.platform(),
    }
