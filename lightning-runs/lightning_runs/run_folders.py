"""Run folders: `runs/<name>/version_N/{config.yaml, events, summary.json, checkpoints/{best,last}.ckpt}`, the layout
TensorBoard's logger makes. A run is named (`--name`) and numbered, never searched for: `--ckpt_path last` is the
newest `version_N` of that name holding a `last.ckpt`. Nothing here imports torch: the `runs` table reads it."""

import fcntl
import json
import os
import re
import stat
from pathlib import Path

RUNS = "runs"  # the runs root every logger of the library defaults to, under the working directory
CHECKPOINTS = "checkpoints"  # where ModelCheckpoint writes without a dirpath: <run>/checkpoints
VERSION = re.compile(r"version_(\d+)")
# A run's own small files read back (summary.json, config.yaml: a few KB): a link to /dev/zero is never read whole.
MAX_RUN_FILE_BYTES = 10_000_000


def run_dir(save_dir, name: str, version: int | str) -> Path:
    return Path(save_dir) / name / (version if isinstance(version, str) else f"version_{version}")


def run_folder(trainer) -> Path | None:
    """The folder the run's logger writes into, on any rank; None without one. Not `Trainer.log_dir`: a collective call
    under DDP, and for MLflow or W&B loggers their save_dir, runs/ itself."""
    log_dir = getattr(trainer.logger, "log_dir", None)
    return None if log_dir is None else Path(log_dir)


def versions(experiment: Path) -> list[tuple[int, Path]]:
    """(N, folder) of each `version_N` in `experiment`, the highest first."""
    found = [(int(m[1]), p) for p in Path(experiment).glob("version_*") if (m := VERSION.fullmatch(p.name))]
    return sorted(found, reverse=True)


def claim_version(experiment: Path) -> int:
    """The next free version number, its folder created atomically: concurrent runs never share one."""
    experiment.mkdir(parents=True, exist_ok=True)
    version = max((n for n, _ in versions(experiment)), default=-1) + 1
    while True:
        try:
            (experiment / f"version_{version}").mkdir()
            return version
        except FileExistsError:
            version += 1


def newest_with(experiment: Path, filename: str) -> Path | None:
    """`<experiment>/version_N/checkpoints/<filename>` of the highest N that has it (a file, or a sharded folder)."""
    for _, folder in versions(experiment):
        path = folder / CHECKPOINTS / filename
        if path.is_file() or (path / ".metadata").is_file():
            return path
    return None


def run_of_checkpoint(path: Path) -> Path | None:
    """The run folder that wrote `<run>/checkpoints/x.ckpt` (it holds a config.yaml), or None for a loose file."""
    folder = Path(path).absolute().parent
    return folder.parent if folder.name == CHECKPOINTS and (folder.parent / "config.yaml").is_file() else None


def lock_run(folder: Path) -> int:
    """Hold `folder` for this command (an advisory lock on the folder itself, released when the process ends however
    it ends); a second command on the same run is refused while this one runs. DDP's other ranks do not inherit it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        from lightning_runs.errors import UsageError

        raise UsageError(f"{folder} is in use by another command that is still running; wait for it to end") from None
    return fd


def free_path(path: Path) -> Path:
    """`path` if it does not exist yet, else the first free `<stem>-N<suffix>`: nothing is overwritten."""
    candidate, n = Path(path), 0
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


def read_run_file(path: Path) -> str:
    """A run's small file as text: a regular file of at most MAX_RUN_FILE_BYTES, else OSError saying which."""
    if not stat.S_ISREG(path.stat().st_mode):
        raise OSError(f"{path} is not a regular file")
    with path.open("rb") as file:
        content = file.read(MAX_RUN_FILE_BYTES + 1)
    if len(content) > MAX_RUN_FILE_BYTES:
        raise OSError(f"{path} is larger than {MAX_RUN_FILE_BYTES:,} bytes")
    return content.decode()


def write_json(path: Path, data: dict) -> None:
    from lightning_runs.atomic import write_atomically

    write_atomically(path, json.dumps(data, indent=2, default=str) + "\n")
