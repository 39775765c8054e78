"""Where a run came from: its resolved config and a hash of it, seeds, git commit, package versions, device."""

import hashlib
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
from pathlib import Path

import torch
from lightning.pytorch.cli import SaveConfigCallback

PACKAGES = ("torch", "torchvision", "lightning", "torchmetrics", "numpy", "scikit-learn", "jsonargparse", "tensorboard")
# Keys that place or display a run without changing what it computes: equal hashes mean the same recipe.
VOLATILE = {"ckpt_path", "quiet", "test_best", "trainer.logger.init_args.version"}
VOLATILE |= {"trainer.enable_progress_bar", "trainer.enable_model_summary"}


def saved_config(trainer) -> str | None:
    """The resolved config as LightningCLI saved it in the run directory (config.yaml, or config.test.yaml
    and the like for later commands), or None outside the CLI. Rank zero, after setup."""
    callback = next((c for c in trainer.callbacks if isinstance(c, SaveConfigCallback)), None)
    log_dir = getattr(trainer.logger, "log_dir", None)
    if callback is None or log_dir is None or not (Path(log_dir) / callback.config_filename).is_file():
        return None
    return (Path(log_dir) / callback.config_filename).read_text()


def flatten(config: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat |= flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def config_hash(config: dict | None) -> str | None:
    if config is None:
        return None
    kept = {k: v for k, v in flatten(config).items() if k not in VOLATILE}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def seeds(config: dict | None) -> dict:
    if config is None:
        return {"seed_everything": os.environ.get("PL_GLOBAL_SEED")}
    # `data.init_args.seed` reads as `data.seed`: the class-path wrapping is how the config is stored, not a name.
    flat = {k.replace(".init_args.", "."): v for k, v in flatten(config).items()}
    return {k: v for k, v in flat.items() if k == "seed_everything" or k.endswith(".seed")}


def git_state() -> dict:
    """The commit of the code that ran (this package's repository, wherever the command was started)."""
    git = ["git", "-C", str(Path(__file__).resolve().parent)]
    try:
        commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):  # no git, or too slow
        return {"commit": None, "dirty": None}
    if commit.returncode != 0:  # not a repository: an installed copy
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


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
