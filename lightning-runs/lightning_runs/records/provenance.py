"""Where a run came from: its saved config, git commit, package versions and device."""

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import re
import socket
import subprocess
import sys
from pathlib import Path

import torch
from lightning.pytorch.cli import SaveConfigCallback
from lightning.pytorch.loggers import MLFlowLogger

from lightning_runs.atomic import write_atomically
from lightning_runs.run_folders import free_path, run_folder

PACKAGES = ("torch", "torchvision", "lightning", "torchmetrics", "numpy", "jsonargparse", "tensorboard", "mlflow")


class SaveConfigInRun(SaveConfigCallback):
    """LightningCLI's config saving, into the run folder of whichever logger the run has (Lightning's saves into
    `Trainer.log_dir`: runs/ itself for an MLflow or W&B logger, Lightning #19441), whole or absent, and never over an
    earlier command's: a resume or an evaluation in the run saves `config.<subcommand>[-N].yaml` beside it. An MLflow
    run gets each as an artifact too: on a tracking server, the only copy of the recipe its users can open."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs, save_to_log_dir=False)

    def save_config(self, trainer, pl_module, stage: str) -> None:  # rank zero only
        folder = run_folder(trainer) or Path(trainer.default_root_dir)
        path = folder / self.config_filename
        if path.exists():
            path = free_path(folder / f"{path.stem}.{trainer.state.fn.value}{path.suffix}")
        self.saved = path
        write_atomically(path, self.parser.dump(self.config, skip_none=False))  # not validated again (cli/help.py)
        for logger in trainer.loggers:
            if isinstance(logger, MLFlowLogger):
                logger.experiment.log_artifact(logger.run_id, str(path))


def _folders(module: str) -> list[Path]:
    """Where the owner's code is (`__main__`: the script), then the working directory."""
    spec = importlib.util.find_spec(module) if module != "__main__" else None
    location = getattr(sys.modules.get("__main__"), "__file__", None) if spec is None else spec.origin
    return ([Path(location).resolve().parent] if location else []) + [Path.cwd()]


def environment(module: str) -> dict:
    """The lock the environment was installed from, the nearest uv.lock above the owner's code: its hash, and each
    installed release it names at another version (none: the environment is the lock's). Packages the lock holds for
    other platforms or extras, not installed here, are no difference."""
    lock = next((f / "uv.lock" for d in _folders(module) for f in (d, *d.parents) if (f / "uv.lock").is_file()), None)
    if lock is None:
        return {"lock": None, "differs": None}
    text = lock.read_bytes()
    pinned: dict[str, set[str]] = {}
    # Each entry's first two lines, as uv writes them: a regular expression over the ~1 MB lock takes milliseconds,
    # a TOML parse of it half a second.
    for name, version in LOCKED.findall(text.decode()):
        pinned.setdefault(_canonical(name), set()).add(version.partition("+")[0])
    installed = {name: version.partition("+")[0] for name, version in _installed().items()}  # a local build's too
    differs = {f"{name} {version} (lock: {', '.join(sorted(pinned[name]))})"
               for name, version in installed.items() if name in pinned and version not in pinned[name]}  # fmt: skip
    return {"lock": f"{lock}", "lock_sha256": hashlib.sha256(text).hexdigest(), "differs": sorted(differs)}


LOCKED = re.compile(r'^\[\[package\]\]\r?\nname = "([^"]+)"\r?\nversion = "([^"]+)"', re.MULTILINE)


@functools.cache  # once per process: what is installed does not change under a running fit
def _installed() -> dict[str, str]:
    """Each installed distribution's version (`2.14.1+cu130`), the first on sys.path as for an import: from its
    folder's name, `<name>-<version>.dist-info` as installers write it, not by reading ~200 metadata files (0.2 s);
    an .egg-info's (a source tree's, `python setup.py develop`) from its metadata."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:  # a zip file, a missing folder
            continue
        for folder in names:
            if folder.endswith(".dist-info") and "-" in folder:
                name, _, version = folder.removesuffix(".dist-info").partition("-")
            elif folder.endswith(".egg-info"):
                dist = importlib.metadata.PathDistribution(Path(entry or ".", folder))
                name, version = dist.metadata["Name"] or "", dist.version or ""
            else:
                continue
            found.setdefault(_canonical(name), version)
    return found


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def git_state(module: str) -> dict:
    """The commit of the code that ran: the repository holding the owner's package (`__main__`: the script), else the
    working directory's; dirty where a tracked file, or a Python file not yet added, differs from it."""
    for folder in _folders(module):
        git = ["git", "-C", str(folder)]
        try:
            commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
            if commit.returncode != 0:  # not a repository: an installed package, a folder outside any checkout
                continue
            new_code = [*git, "ls-files", "--others", "--exclude-standard", "--", "*.py"]
            changes = ([*git, "status", "--porcelain", "--untracked-files=no"], new_code)
            dirty = any(subprocess.run(c, capture_output=True, text=True, timeout=10).stdout.strip() for c in changes)
        except (OSError, subprocess.SubprocessError):  # no git, or too slow
            break
        return {"commit": commit.stdout.strip(), "dirty": dirty}
    return {"commit": None, "dirty": None}


def versions() -> dict:
    found = {"python": platform.python_version(), "cuda": torch.version.cuda, "torch": torch.__version__}
    return found | {package: _installed().get(package) for package in PACKAGES[1:]}


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
    }
