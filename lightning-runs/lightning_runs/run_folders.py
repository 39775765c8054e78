"""Run folders: `runs/<name>/version_N/{config.yaml, events, summary.json, checkpoints/{best,last}.ckpt}`, the layout
TensorBoard's logger makes. A run is named (`--name`) and numbered, never searched for: `--ckpt_path last` is the
newest `version_N` of that name holding a `last.ckpt`. Nothing here imports torch: the `runs` table reads it."""

import contextlib
import fcntl
import json
import math
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

import yaml

from lightning_runs.atomic import write_atomically
from lightning_runs.errors import UsageError

RUNS = "runs"  # the runs root every logger of the library defaults to, under the working directory
CHECKPOINTS = "checkpoints"  # where ModelCheckpoint writes without a dirpath: <run>/checkpoints
VERSION = re.compile(r"version_(\d+)")
FIRST_FILES = re.compile(r"config\.yaml|hparams\.yaml|events\.out\.tfevents\..+")  # a run's, before its fit began
# A run's own small files read back (summary.json, config.yaml: a few KB): a link to /dev/zero is never read whole.
MAX_RUN_FILE_BYTES = 10_000_000
# The sections of a run's file that the library reads into, each a mapping where present.
SECTIONS = {"config.yaml": ("trainer", "model", "data")}
# The fields of a summary.json that are read back (the runs table, a resume, RunSummary itself) and the types RunSummary
# writes them in (a score is text where it was not finite: "nan").
NUMBER, TEXT, OBJECT = (int, float, type(None)), (str, type(None)), (dict, type(None))
FIELDS: dict = dict.fromkeys(("config", "process", "git", "environment", "metrics", "best_checkpoint"), OBJECT)
FIELDS |= dict.fromkeys(
    ("started", "config_hash", "git.commit", "environment.lock_sha256", "best_checkpoint.monitor"), TEXT
)
FIELDS |= {"wall_time_s": NUMBER, "environment.differs": (list, type(None)), "best_checkpoint.score": (*NUMBER, str)}
DAMAGED = "a run's own file, damaged: restore it, or move its run folder away"
MAX_VALUES = 100_000  # a config of every option of the Trainer, a module and a DataModule is ~300


def run_dir(save_dir, name: str, version: int | str) -> Path:
    return Path(save_dir) / name / (version if isinstance(version, str) else f"version_{version}")


def check_folder_name(option: str, name: str) -> None:
    """A name that becomes one folder's or file's name (a study's): one path component, printable (a newline would
    split every line that shows it)."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or not name.isprintable():
        raise UsageError(f"{option} {name!r}: must be one folder name (no '/' or control character, not '..' or empty)")


def run_folder(trainer) -> Path | None:
    """The folder the run's logger writes into, on any rank; None without one. Not `Trainer.log_dir`: a collective call
    under DDP, and for MLflow or W&B loggers their save_dir, runs/ itself."""
    log_dir = getattr(trainer.logger, "log_dir", None)
    return None if log_dir is None else Path(log_dir)


def versions(experiment: Path) -> list[tuple[int, Path]]:
    """(N, folder) of each `version_N` in `experiment`, the highest first."""
    found = [(int(m[1]), p) for p in Path(experiment).glob("version_*") if (m := VERSION.fullmatch(p.name))]
    return sorted(found, reverse=True)


def checkpoint_in(where: Path | str, filename: str) -> Path | None:
    """`<run>/checkpoints/<filename>` of the run folder `where`, or of the newest `version_N` of the experiment `where`
    that has one; None where none has. Whatever lies there: one that is no checkpoint (a folder, a FIFO) is refused
    where it is read, never passed over for an older run or a fresh start."""
    where = Path(where)
    runs = [where] if (where / CHECKPOINTS).is_dir() else [folder for _, folder in versions(where)]
    files = (run / CHECKPOINTS / filename for run in runs)
    return next((path for path in files if os.path.lexists(path)), None)


def run_of_checkpoint(path: Path) -> Path | None:
    """The run folder that wrote `<run>/checkpoints/x.ckpt` (it holds a config.yaml), or None for a loose file."""
    folder = Path(path).absolute().parent
    return folder.parent if folder.name == CHECKPOINTS and (folder.parent / "config.yaml").is_file() else None


# The run folders' locks this process holds. A process forked while one is held (a DataLoader's worker) shares the
# lock (flock's is the open file's): each child closes its copy, or the lock outlived the command by as long as its
# workers did, and the next command on the run, in the same process (verify), was refused as "in use".
# By (inode, device): a number closed without release() (a test's os.close) may name another file by the next fork.
_HELD: dict[int, tuple[int, int]] = {}


def _close_held_locks() -> None:
    for fd, folder in _HELD.items():
        with contextlib.suppress(OSError):
            if os.fstat(fd)[1:3] == folder:
                os.close(fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_close_held_locks)


def lock_run(folder: Path) -> int:
    """Hold `folder` for this command (an advisory lock on the folder itself, released when the process ends however
    it ends); a second command on the same run is refused while this one runs. DDP's other ranks do not inherit it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageError(f"{folder} is in use by another command that is still running; wait for it to end") from None
    _HELD[fd] = os.fstat(fd)[1:3]  # (inode, device)
    return fd


@dataclass
class RunFolder:
    """A run's folder, `<save_dir>/<name>/version_N`, held by the command that writes into it (`lock`: lock_run's).
    `created`: made by this command, which removes it again where the command is refused before saving any checkpoint;
    `before`: an existing run's files as the command found them, and a refused command removes what it added (a
    config.predict.yaml, an events file); `kept`: the nearest folder above it that existed before (the ones between
    are this command's)."""

    path: Path
    created: bool
    kept: Path
    before: set[Path]
    lock: int

    @classmethod
    def claim(cls, experiment: Path, version: int | str | None) -> "RunFolder":
        """The given version's folder (made if missing), or with None the next free `version_N`, created atomically:
        concurrent runs never share one."""
        kept = experiment.absolute()
        while not kept.exists() and kept != kept.parent:
            kept = kept.parent
        created = version is None
        if version is None:
            experiment.mkdir(parents=True, exist_ok=True)
            version = max((n for n, _ in versions(experiment)), default=-1) + 1
            while True:
                with contextlib.suppress(FileExistsError):  # made by another command since: the next
                    (experiment / f"version_{version}").mkdir()
                    break
                version += 1
        path = run_dir(experiment.parent, experiment.name, version)
        created = created or not path.exists()
        path.mkdir(parents=True, exist_ok=True)
        lock = lock_run(path)
        if not created and abandoned(path):  # judged again under the lock: its files go, and it starts anew
            for child in path.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            created = True
        return cls(path, created, kept, set() if created else set(path.rglob("*")), lock)

    def release(self, refused: bool) -> None:
        """Let go of the folder. A refused command removes what it added (all of a folder it made, which then goes
        too), never a checkpoint; a folder it made that holds a checkpoint is kept whole, one left empty goes."""
        _HELD.pop(self.lock, None)
        os.close(self.lock)
        kept_whole = self.created and any(self.path.rglob("*.ckpt"))
        added = set(self.path.rglob("*")) - self.before if refused and not kept_whole else set()
        for path in sorted(added, key=lambda p: len(p.parts), reverse=True):  # deepest first: a folder goes once empty
            if not any(part.endswith(".ckpt") for part in path.relative_to(self.path).parts):
                with contextlib.suppress(OSError):
                    path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
        folder = self.path.absolute()
        while self.created and folder != self.kept and folder.is_relative_to(self.kept):
            try:
                with contextlib.suppress(FileNotFoundError):
                    folder.rmdir()
            except OSError:  # something was written: kept
                break
            folder = folder.parent


def abandoned(folder: Path) -> bool:
    """A run folder that no run will go on with: no checkpoint, not finished, and the process its summary.json records
    gone (killed with -9 before its first checkpoint); without a summary, one holding a run's first files only (killed
    in its set-up). Whoever pins it next (a SLURM job's version, a cv fold) starts it again; whether a command holds it
    still is its lock's to say (lock_run)."""
    from lightning_runs.processes import is_dead  # psutil, for this question only

    if not (folder / "summary.json").exists():
        return all(FIRST_FILES.fullmatch(path.name) for path in folder.iterdir())
    try:
        summary = read_summary(folder / "summary.json")
    except UsageError:  # damaged: not judged, kept
        return False
    process, ended = summary.get("process"), summary.get("status") == "completed"
    return not ended and not any(folder.rglob("*.ckpt")) and process is not None and is_dead(process)


def free_path(path: Path) -> Path:
    """`path` if it does not exist yet, else the first free `<stem>-N<suffix>`: nothing is overwritten."""
    candidate, n = Path(path), 0
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


class Unreadable(UsageError):
    """A file the library reads back that it cannot use: the line names the file, what is wrong, and what to do."""

    def __init__(self, path: Path, problem: str, fix: str = DAMAGED) -> None:
        super().__init__(f"{path}: {problem}; {fix}")
        self.problem = problem


def read_run_data(path: Path, fix: str = DAMAGED, sections: tuple[str, ...] | None = None) -> dict:
    """The mapping a run's config.yaml or summary.json holds (a .json file as JSON, any other as YAML); Unreadable
    where it is not a regular file, is over MAX_RUN_FILE_BYTES, not UTF-8, empty, does not parse, gives a key twice,
    expands past MAX_VALUES values (an alias bomb) or holds no mapping (`sections`: keys whose value must be one)."""
    if not stat.S_ISREG(path.stat().st_mode):  # a folder, a FIFO, /dev/zero: never opened
        raise Unreadable(path, "not a regular file", fix)
    with path.open("rb") as file:
        content = file.read(MAX_RUN_FILE_BYTES + 1)
    if len(content) > MAX_RUN_FILE_BYTES:
        raise Unreadable(path, f"larger than {MAX_RUN_FILE_BYTES:,} bytes", fix)
    try:
        text = content.decode()
    except UnicodeDecodeError as error:
        raise Unreadable(path, f"not UTF-8 text ({error.reason} at byte {error.start})", fix) from None
    if not text.strip():
        raise Unreadable(path, "empty", fix)
    form = "JSON" if path.suffix == ".json" else "YAML"
    try:
        data = json.loads(text) if form == "JSON" else yaml.load(text, StrictLoader)
    except RecursionError:
        raise Unreadable(path, "nested too deeply to read", fix) from None
    except yaml.MarkedYAMLError as error:
        raise Unreadable(path, f"not YAML ({error.problem}, line {error.problem_mark.line + 1})", fix) from None  # ty: ignore[missing-union-attribute]  # a parse error has its mark
    except (ValueError, yaml.YAMLError) as error:  # JSONDecodeError, an integer 5,000 characters long
        raise Unreadable(path, f"not {form} ({str(error).splitlines()[0].partition(';')[0][:200]})", fix) from None
    if not isinstance(data, dict):
        raise Unreadable(path, f"{_kind(form, data)}, not a mapping", fix)
    if _values(data) > MAX_VALUES:  # aliases are shared, not copied: cheap to load, endless for whoever walks it
        raise Unreadable(path, f"expands to more than {MAX_VALUES:,} values (YAML aliases repeated)", fix)
    for key in SECTIONS.get(path.name, ()) if sections is None else sections:
        if not isinstance(data.get(key), dict | None):
            raise Unreadable(path, f"its {key} is {_kind(form, data[key])}, not a mapping", fix)
    return data


class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser where PyYAML has it: 10x faster
    def construct_mapping(self, node, deep=False):
        keys = [key.value for key, _ in node.value if isinstance(key, yaml.ScalarNode) and key.value != "<<"]
        twice = next((key for key in keys if keys.count(key) > 1), None)  # PyYAML keeps the last, silently
        if twice is not None:
            raise yaml.MarkedYAMLError(problem=f"the key {twice!r} given twice", problem_mark=node.start_mark)
        return super().construct_mapping(node, deep)


def _values(data, budget: int = MAX_VALUES) -> int:
    """How many values `data` holds as a reader walks it (a shared list once per place), counted up to past `budget`."""
    count, stack = 0, [data]
    while stack and count <= budget:
        value = stack.pop()
        count += 1
        stack.extend(value.values() if isinstance(value, dict) else value if isinstance(value, list) else ())
    return count


def read_summary(path: Path) -> dict:
    """A run's summary.json, each field that is read back of the type RunSummary writes; Unreadable where it is not."""
    summary = read_run_data(path)
    for field, kinds in FIELDS.items():
        value = get(summary, *field.split("."))
        if not isinstance(value, kinds):
            raise Unreadable(path, f"its {field} has the wrong type ({type(value).__name__})")
        if isinstance(value, float) and not math.isfinite(value) and kinds is NUMBER:
            raise Unreadable(path, f"its {field} is not a finite number ({value})")
    return summary


def get(data: object, *keys):
    """`data[a][b]...`, None where any is missing or not a mapping."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _kind(form: str, value) -> str:
    return f"a {form} {'null' if value is None else type(value).__name__}"


def write_json(path: Path, data: dict) -> None:
    write_atomically(path, json.dumps(data, indent=2, default=str) + "\n")
