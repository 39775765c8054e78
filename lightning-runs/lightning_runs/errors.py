"""What can go wrong, as types, and `main`: the one place that turns any error into one line and an exit code.

Library code raises these (or lets the OS, torch and jsonargparse raise theirs); no call site words an OSError or a
parse error itself: `main` says which file and what to do, once, for every command and tool.
"""

import errno
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from lightning_runs.configs import option

T = TypeVar("T")
# A refused launch is said by rank zero only; torchrun stops every rank once one has exited, so the others wait this
# long first, for rank zero (parsing the same command) to say it.
OTHER_RANKS_WAIT_S = 3
NO_SPACE = {errno.ENOSPC, errno.EDQUOT}
# What the OS says of a path, and what to do about it; ENOSPC/EDQUOT exit 1 (the command could not finish), the rest
# 2 (a path the command was given, or chose from what it was given, cannot be used).
FIXES = {
    errno.ENOSPC: "disk full; free some space, then run the command again (a fit resumes with --ckpt_path last)",
    errno.EDQUOT: "disk quota exceeded; free some space, then run the command again",
    errno.EACCES: "permission denied; give a path you may write, or change its permissions",
    errno.EPERM: "operation not permitted (an immutable or protected file?); give another path",
    errno.EROFS: "read-only file system; give a path on a writable one",
    errno.EISDIR: "is a folder; give a file",
    errno.ENOENT: "no such file or folder; check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder; check the path",
    errno.EEXIST: "already exists; give another name, or move it away",
    errno.ELOOP: "too many levels of links; check the path",
    errno.ENAMETOOLONG: "a name longer than the file system allows; give a shorter one",
}


class UsageError(ValueError):
    """A bad command line, config, file or checkpoint: nothing ran, and the message says what to change. Exit 2."""


class TrialRefusal(UsageError):
    """A sweep's trial cannot be scored as its sweep scores it: its worker says the line once. Exit 2, silently."""


class Diverged(FloatingPointError):
    """The loss or its gradients turned NaN/Inf: the run stopped before they reached the weights. Exit 1."""


class Failed(RuntimeError):
    """The command ran and could not do its job (every trial of a sweep failed). Exit 1."""


class Stopped(SystemExit):
    """SIGTERM or Ctrl-C ended the run after saving a checkpoint it resumes from. Exit 128 + the signal, in a plain
    script too (a SystemExit), whose line it says as it is raised: Python prints none for a SystemExit."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(128 + signum)  # what shells report for a process ended by that signal: 143, 130
        self.exit_code, self.message = 128 + signum, message
        if not isinstance(threading.excepthook, _BackgroundErrors):  # else `main` runs, and says it in its terms
            print(message, file=sys.stderr, flush=True)

    def __str__(self) -> str:
        return self.message


class Terminated(BaseException):
    """SIGTERM outside the training loop, raised wherever the program is, as Ctrl-C raises KeyboardInterrupt (and like
    it no Exception, so no `except Exception` takes it for an error of its own). Exit 143."""


def first_line(error: BaseException) -> str:
    """The error's first line, with the next where the first only announces it (`Error(s) in loading state_dict:`)."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()] or [type(error).__name__]
    return f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]


# The parts word their lines for a plain script, a setting as the Python that gives it (`Trainer(limit_val_batches=0)`,
# `EarlyStopping(monitor=...)`, `trainer.fit(..., ckpt_path="last")`, `leave EarlyStopping out`); a command line's
# lines name its options instead (`--trainer.limit_val_batches 0`, `--early_stopping.monitor`, `--ckpt_path last`,
# `--early_stopping null`): a class's group is `configs.option`'s name of it, unless OPTIONS names the option.
IN_PYTHON = r'\b([A-Z]\w*|trainer\.fit|fold_indices)\((?:\.{3}, )?(\w+)=("[^"]*"|[\w.+-]*)\)|leave ([A-Z]\w*) out'
# The options the CLI names otherwise: trainer.fit's argument is the command's own, fold_indices' the DataModule's (the
# contract's `folds`), InitFrom's two the command's own (cli/parts.py adds them).
OPTIONS = {"trainer.fit.ckpt_path": "ckpt_path", "fold_indices.folds": "data.folds"}
OPTIONS |= {"InitFrom.path": "init_from", "InitFrom.freeze": "freeze"}


def cli_terms(line: str) -> str:
    def term(match: re.Match) -> str:
        name, key, value, off = match.groups()
        if off:
            return f"--{option(off)} null"
        flag = "--" + OPTIONS.get(f"{name}.{key}", f"{option(name)}.{key}")
        # None: the command's own option left out (fit's ckpt_path)
        return f"drop {flag}" if value == "None" else flag + ("" if value == "..." else " " + value.strip('"'))

    return re.sub(IN_PYTHON, term, line)


def said(error: BaseException) -> tuple[str, int] | None:
    """The line and exit code for an error `main` answers, or None for one that is a bug (its traceback shows)."""
    from jsonargparse import ArgumentError  # here: `runs` answers without importing jsonargparse's parsers

    # Lightning's and torch's error types by name: importing them here made each refusal of `runs` a 5 s start.
    kinds = {kind.__name__ for kind in type(error).__mro__}
    if isinstance(error, TrialRefusal):
        return "", 2
    if isinstance(error, ArgumentError):
        from lightning_runs.messages import condensed

        return f"error: {condensed(error, None)}", 2
    if isinstance(error, UsageError) or "MisconfigurationException" in kinds:
        return f"error: {first_line(error)}", 2
    if isinstance(error, Diverged | Failed):
        return f"error: {error}", 1
    if isinstance(error, Stopped):
        return error.message, error.exit_code
    if isinstance(error, Terminated):
        return str(error) or "stopped by SIGTERM", 128 + signal.SIGTERM
    if isinstance(error, KeyboardInterrupt) or isinstance(error.__context__, KeyboardInterrupt):
        return "stopped by Ctrl-C", 128 + signal.SIGINT
    if isinstance(error, OSError) and error.errno in FIXES:
        where = os.fsdecode(error.filename) if error.filename else "a file"
        return f"error: {where}: {FIXES[error.errno]}", 1 if error.errno in NO_SPACE else 2
    if isinstance(error, RuntimeError) and str(error).startswith("Error(s) in loading state_dict"):
        return f"error: the checkpoint's weights do not fit the model ({first_line(error)})", 2
    if isinstance(error, ValueError) and "num_samples=0" in str(error):  # torch's RandomSampler, as a loader is built
        return f"error: a shuffled DataLoader over no samples, an empty split ({first_line(error)}); give it samples", 2
    if "Unsupported" in kinds and "torch._dynamo" in type(error).__module__:
        # torch.compile(fullgraph=True) meeting a graph break, as it first runs the network; named where in user code
        at = re.findall(r'File "(.+)", line (\d+), in (\w+)', str(error).partition("from user code:")[2])[-1:]
        where = "".join(f" in {function} ({file}:{line})" for file, line, function in at)
        fix = "compile without fullgraph (--compile.fullgraph false: the break runs eagerly), or remove the break"
        return f"error: torch.compile(fullgraph=True) met a graph break{where}: {first_line(error)}; {fix}", 2
    if "CheckpointException" in kinds:  # torch.distributed.checkpoint's, a BaseException
        return f"error: a sharded checkpoint could not be read whole ({first_line(error)}); give a complete one", 2
    return None


def main(command: Callable[[], T]) -> T:
    """Run `command`; on failure exit as a scheduler or a shell script expects: 1 failed, 2 bad input, 130/143."""
    background = _BackgroundErrors()
    try:
        result = command()
        if background.error is not None:  # a writer thread's only trace: the command went on without what it wrote
            raise background.error
        return result
    except BaseException as error:
        # A SystemExit is said here only as a stop (Stopped, or Lightning's exit after a Ctrl-C it caught): any other
        # exit has said what it had to.
        answer = said(error)
        if answer is None:
            raise
        message, code = cli_terms(answer[0]), answer[1]
        if code == 2 and _launched_other_rank():
            time.sleep(OTHER_RANKS_WAIT_S)  # its line is rank zero's
        elif message:
            print(message, file=sys.stderr, flush=True)
        sys.exit(code)
    finally:
        threading.excepthook = background.previous


class _BackgroundErrors:
    """An OSError in a background writer (TensorBoard's event-file thread) would print a thread's traceback, then reach
    the main thread again at the writer's next call: kept quiet here, said once by `main`."""

    def __init__(self) -> None:
        self.error: OSError | None = None
        self.previous = threading.excepthook
        threading.excepthook = self

    def __call__(self, args) -> None:
        if isinstance(args.exc_value, OSError) and args.exc_value.errno in FIXES:
            self.error = self.error or args.exc_value
        else:
            self.previous(args)


def _launched_other_rank() -> bool:
    """A rank other than zero of a job torchrun or srun started, or of Lightning's own launch (its children have a
    LOCAL_RANK, another node's first process a NODE_RANK): its refusal is rank zero's, said once there."""
    rank = os.environ.get("RANK") if "TORCHELASTIC_RUN_ID" in os.environ else os.environ.get("SLURM_PROCID")
    lightnings = os.environ.get("LOCAL_RANK", "0") != "0" or os.environ.get("NODE_RANK", "0") != "0"
    return rank not in (None, "0") or lightnings
