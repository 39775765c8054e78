"""What the tests share: running the CLI in this process or as a process, reading a run's events, and the crash and
signal helpers that configs name as class paths (`support.CrashAt`, `support.SignalAt`, `support.ScancelAt`). What a
command did to the files, checkpoints compared, and DDP launches are the library's test helpers
(lightning-runs/tests/tiny_runs.py, tiny_launchers.py), re-exported here. Fixtures and hooks are in conftest.py."""

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from lightning.pytorch.callbacks import Callback
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tiny_launchers import free_port  # noqa: F401 - re-exported: the library's test helpers serve these tests too
from tiny_runs import (  # noqa: F401 - re-exported
    assert_kept,
    assert_same_checkpoint,
    finished,
    forked,
    load,
    process_environment,
    same,
    scalars,
    slow_repeats,
    snapshot,
    wait_for,
)
from tiny_runs import run as run_task

from lightning_runs.data.batches import ShardSampler, TensorBatches
from lightning_runs.testing import SignalAt  # noqa: F401 - re-exported

from project.cli import cli_main
from project.data import DigitsDataModule

from helpers import DEFAULT, ONE_EPOCH_TWO_BATCHES, QUIET, ROOT, CrashAt, refusal, run  # noqa: F401 - re-exported


@contextmanager
def working_directory(path: Path) -> Iterator[Path]:
    """Runs go to runs/ under the working directory: a module's shared run gets a folder of its own."""
    previous = Path.cwd()
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(previous)


# Counts of the digits as the DataModule splits and batches them, for tests that count steps or samples: derived
# here, never written as 1437 // 64 or 180 (tests/test_data.py checks the split sizes themselves).
@functools.cache
def split_sizes(**data) -> dict[str, int]:
    """Samples in each split, with the DataModule's defaults or the given `--data.*` arguments."""
    datamodule = DigitsDataModule(**data)
    return {name: len(indices) for name, indices in datamodule.split(len(datamodule.load()[1])).items()}


def cli(*args: str, callbacks=()):
    """`python -m project <args>` in this process without the default config (a task named by class path or by a
    config of its own), no progress bars: the CLI object, or SystemExit with its exit code."""
    return run_task(*args, callbacks=callbacks, cli=cli_main)


def steps_per_epoch(world_size: int = 1, **data) -> int:
    """Training steps of one epoch on each of `world_size` processes: the train split in equal shards, cut into
    full batches as the DataModule cuts it (the ragged last batch is dropped)."""
    train, batch_size = split_sizes(**data)["train"], DigitsDataModule(**data).hparams.batch_size
    shard = ShardSampler(train, shuffle=True, world_size=world_size)
    return len(TensorBatches((torch.empty(train),), batch_size, shard, drop_last=True))


def run_subprocess(*args: str, timeout: float = 300, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`python -m project <args>` as a user types it; needed where Lightning starts processes itself (DDP)."""
    command = [sys.executable, "-m", "project", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=ddp_environment())


def ddp_environment(**extra: str) -> dict[str, str]:
    """The library tests' process environment (tiny_runs.process_environment: no launcher's variables, one thread a
    process), with the repository and tests/ importable (class paths such as `support.CrashAt`)."""
    # The library beside the project first: a checkout's own lightning_runs, not the one installed from another.
    # support.py imports the library's test helpers (tests/template/conftest.py): their folder too.
    folders = [ROOT, ROOT / "lightning-runs", ROOT / "tests", ROOT / "tests/template", ROOT / "lightning-runs/tests"]
    return {**process_environment(), "PYTHONPATH": os.pathsep.join(map(str, folders)), **extra}


def read_events(run_dir: Path) -> EventAccumulator:
    """Every event of a run's TensorBoard files (size_guidance 0: keep all, not a sample)."""
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "images": 0, "histograms": 0, "tensors": 0})
    events.Reload()
    return events


class ScancelAt(Callback):
    """A test helper: sends SIGTERM to this process's whole process group as the given global step begins, as
    scancel signals every process of a job, its batch script included. Only for a job started in a session of its
    own (test_slurm.py), or it would signal the tests too."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step == self.step:
            os.killpg(0, 15)  # SIGTERM


def start(*args: str) -> subprocess.Popen:
    """`python -m project <args>` in the background, for tests that signal or kill it."""
    command = [sys.executable, "-m", "project", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ddp_environment())


# The short run the observability tests and the notebooks read: 5 epochs of 5 steps, pictures and histograms
# every 2 epochs (so epoch 5 is logged as the end of fit, not as one of every 2), gradient histograms on; then `test`
# on its best checkpoint, which logs into the same run directory.
SHORT_RUN = [
    "--trainer.max_epochs=5",
    "--trainer.limit_train_batches=5",
    "--figures.every_n_epochs=2",
    "--histograms.every_n_epochs=2",
    "--histograms.gradients=true",
]


def template_repository(dest: Path, history: bool = False) -> Path:
    """A git repository at `dest` holding this template's working tree as one commit (uncommitted changes
    included, ignored files not), for tests of copies and updates: what `make new-project` copies is a commit.
    With `history`, that commit goes on top of a clone of this repository's own history."""
    if history:
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(dest)], check=True)
        subprocess.run(["git", "rm", "-r", "--quiet", "."], cwd=dest, check=True)
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():  # not deleted since the last commit
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    commit = ["commit", "--quiet", "--allow-empty", "-m", "The template"]
    for command in ([] if history else [["init", "--quiet"]]) + [["add", "--all"], commit]:
        subprocess.run(["git", *command], cwd=dest, env=GIT_ENV, capture_output=True, check=True)
    return dest


# CI may have no git identity, and commits need one; a developer's own git settings (signing, hooks, the default
# branch) stay out of the tests' repositories.
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
GIT_ENV |= {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER") for what, value in
            (("NAME", "Test"), ("EMAIL", "t@example.com"))}  # fmt: skip
# The copies' make uses the template's uv (the Makefile exports it; else the one on PATH or in .uv/), offline: the
# template's own install filled uv's cache with every release the lock pins, so a copy installs from there.
UV = os.environ.get("UV") or shutil.which("uv") or str(ROOT / ".uv/bin/uv")
GIT_ENV |= {"UV": UV, "UV_OFFLINE": "1"}
