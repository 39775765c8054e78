"""Where runs live: runs/<name>/version_N/{config.yaml, events, checkpoints/{best,last}.ckpt, ...}."""

import contextlib
import fcntl
import json
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

from lightning_runs.atomic import write_atomically
from lightning_runs.errors import Failed, UsageError
from lightning_runs.limits import MAX_RUN_FILE_BYTES

RUNS = "runs"  # the runs root every logger of the library defaults to, relative to the working directory
_VERSION = re.compile(r"version_(\d+)")
# A sharded fit's checkpoint is a folder (checkpoints/sharded.py): Lightning's name for the part that is not sharded
# (lightning.fabric.utilities.load._METADATA_FILENAME), and torch.distributed.checkpoint's index of the shards.
METADATA, SHARDS_METADATA = "meta.pt", ".metadata"


def next_version(experiment: Path) -> int:
    """One past the highest `version_N` in `experiment` (0 in an empty or missing one), as TensorBoard numbers them."""
    taken = [int(m.group(1)) for p in experiment.glob("version_*") if (m := _VERSION.fullmatch(p.name))]
    return max(taken, default=-1) + 1


def claim_version(experiment: Path) -> int:
    """The next free version number, its folder created atomically so concurrent runs never share one."""
    experiment.mkdir(parents=True, exist_ok=True)
    version = next_version(experiment)
    while True:
        try:
            (experiment / f"version_{version}").mkdir()
            return version
        except FileExistsError:
            version += 1


def lock_run(folder: Path) -> int:
    """Hold `folder` for this command: another command on the same run is refused while this one runs.

    An advisory lock on the folder itself (no lock file to leave behind), released when the process ends however it
    ends, or by `unlock_run`; the processes DDP starts do not inherit it.
    """
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageError(
            f"{folder} is in use by another command that is still running (a fit or an evaluation of that run);"
            " wait for it to end, or copy the checkpoint out of the run to evaluate it now"
        ) from None
    return fd


def unlock_run(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the only descriptor of the lock releases it


def is_sharded(path: Path) -> bool:
    """A folder holding a whole sharded checkpoint (both indexes written: a save writes them last)."""
    path = Path(path)
    return path.is_dir() and (path / SHARDS_METADATA).is_file() and (path / METADATA).is_file()


def is_checkpoint(path: Path) -> bool:
    """A checkpoint file, or a sharded checkpoint's folder."""
    return Path(path).is_file() or is_sharded(path)


def runs_with_checkpoint(experiment: Path, name: str) -> list[tuple[Path, Path]]:
    """(`<experiment>/version_N`, its `checkpoints/<name>.ckpt`) for every N that has one (a file, or a sharded fit's
    folder), the highest N first."""
    found = [
        (int(m.group(1)), path, path / "checkpoints" / f"{name}.ckpt")
        for path in experiment.glob("version_*")
        if (m := _VERSION.fullmatch(path.name)) and is_checkpoint(path / "checkpoints" / f"{name}.ckpt")
    ]
    return [(folder, checkpoint) for _, folder, checkpoint in sorted(found, reverse=True)]


def run_of_checkpoint(ckpt_path: Path) -> tuple[str, str, int | str] | None:
    """(save_dir, name, version) of the run that wrote `<run>/checkpoints/x.ckpt`, or None for a loose file.

    Relative to the working directory when inside it, as the run's own paths were written, so that the
    checkpoint callbacks recognise their folder and restore their state.
    """
    folder = Path(ckpt_path).resolve().parent
    if folder.name != "checkpoints":
        return None
    run = Path(os.path.relpath(folder.parent))
    match = _VERSION.fullmatch(run.name)
    return str(run.parent.parent), run.parent.name, int(match.group(1)) if match else run.name


def run_folder(trainer) -> Path | None:
    """The folder the run's logger writes into (TensorBoard's, or one of loggers/), on any rank; None
    without a logger or with one that keeps no folder. Not `Trainer.log_dir`: that is a collective call under DDP,
    and for any logger but TensorBoard's and CSV's it is the logger's `save_dir`, runs/ itself."""
    log_dir = getattr(trainer.logger, "log_dir", None)
    return None if log_dir is None else Path(log_dir)


def run_dir(save_dir: str, name: str, version: int | str) -> Path:
    return Path(save_dir) / name / (version if isinstance(version, str) else f"version_{version}")


def free_path(path: Path, *beside: str) -> Path:
    """`path` if it does not exist yet, else the first free `<stem>-N<suffix>`: nothing is overwritten. With suffixes
    `beside` (".npy"), the files of the same name with them must be free too: they are written with it."""
    candidate, n = path, 0
    while any(p.exists() for p in (candidate, *(candidate.with_suffix(suffix) for suffix in beside))):
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


def write_json(path: Path, data: dict) -> None:
    """`data` as JSON (a path, say, as its text), atomically: readers see the old file or the new one, never half."""
    write_atomically(path, json.dumps(data, indent=2, default=str) + "\n")


def read_run_file(path: Path) -> str:
    """A run's small file as text: a regular file of at most MAX_RUN_FILE_BYTES, else OSError saying which (a link to
    /dev/zero or a FIFO is never opened; a file that grows is cut at the limit and refused)."""
    if not stat.S_ISREG(path.stat().st_mode):
        raise OSError(f"{path} is not a regular file")
    with path.open("rb") as file:
        content = file.read(MAX_RUN_FILE_BYTES + 1)
    if len(content) > MAX_RUN_FILE_BYTES:
        raise OSError(f"{path} is larger than {MAX_RUN_FILE_BYTES} bytes (lightning_runs/limits.py)")
    return content.decode()


def saved_config(path: Path) -> dict | None:
    """A run's config.yaml (the resolved config its fit saved), or None where it is missing or not a config."""
    try:
        saved = yaml.safe_load(read_run_file(path))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return saved if isinstance(saved, dict) else None


def classes_of_run(ckpt_path: Path) -> dict[str, dict]:
    """The `model` and `data` sections ({class_path, init_args}) of the config.yaml of the run that wrote
    `<run>/checkpoints/x.ckpt`: what a checkpoint of a module that saves no hyperparameters (Lightning's BoringModel)
    cannot say itself. Empty for a loose file or a run without its config; nothing is imported."""
    folder = Path(ckpt_path).parent
    config = saved_config(folder.parent / "config.yaml") if folder.name == "checkpoints" else None
    sections = {}
    for group in ("model", "data"):
        section = (config or {}).get(group)
        if isinstance(section, dict) and isinstance(section.get("class_path"), str):
            sections[group] = {"class_path": section["class_path"], "init_args": section.get("init_args") or {}}
    return sections


def deleted(folder: Path, lock: int) -> bool:
    """Whether the run folder locked as `lock` (lock_run's descriptor) is no longer at `folder`: removed, or removed and
    made again (a writer that creates its parents brings back an empty one)."""
    try:
        now, locked = folder.stat(), os.fstat(lock)
    except FileNotFoundError:
        return True
    return (now.st_dev, now.st_ino) != (locked.st_dev, locked.st_ino)


@contextlib.contextmanager
def deletion_said(claimed: Callable) -> Iterator[None]:
    """A run folder deleted while the command writes into it (`rm -r` by hand, a clean-up job) is one line, instead of
    the tracebacks of each writer that finds its file gone (TensorBoard's writer thread, then Lightning's logging
    call). `claimed()`: the command's placement.Claim (its folder and lock) once claimed, else None."""

    def gone() -> Path | None:
        claim = claimed()
        return claim.folder if claim is not None and deleted(claim.folder, claim.lock) else None

    previous = threading.excepthook
    threading.excepthook = lambda args: None if gone() else previous(args)  # the main thread says it, below
    try:
        yield
    except Exception:
        folder = gone()
        if folder is None:
            raise
        raise Failed(
            f"{folder} was deleted while this command wrote into it (with all the run had saved there); run the"
            " command again for a new run"
        ) from None
    finally:
        threading.excepthook = previous
