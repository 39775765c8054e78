"""What can go wrong, as types: library code raises these, and only the entry point (`main`) turns them into an
exit code and one line on stderr."""

import errno
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
# A refused launch is said by rank zero only; torchrun stops every rank once one has exited, so the others wait this
# long first, for rank zero (parsing the same command) to say it.
OTHER_RANKS_WAIT_S = 3
# What a full disk or an exhausted quota look like to write(), fsync() and link().
NO_SPACE = {errno.ENOSPC, errno.EDQUOT}
# Said after every "disk full": what to do, whichever file it was.
FREE_SOME_SPACE = (
    "free some space, then run the command again (a fit resumes from its last checkpoint with --ckpt_path last)"
)


class UsageError(ValueError):
    """A bad command line, config, file or checkpoint: nothing ran, and the message says what to change. Exit 2."""


class TrialRefusal(UsageError):
    """A sweep's trial cannot be scored as its sweep scores it (lightning_runs.sweeps.scoring): a refusal of the
    sweep's, not of the trial's values. The fit exits 2 without a line: its worker says it once, as it stops the
    sweep."""


class Diverged(FloatingPointError):
    """The loss or its gradients turned NaN/Inf: the run stopped before they reached the weights. Exit 1."""


class Failed(RuntimeError):
    """The command ran and could not do its job: the disk filled up, every trial of a sweep failed. Exit 1."""


class DiskFull(Failed):
    """No space left for a file the command writes, said with its path. Exit 1."""


class Stopped(Exception):
    """SIGTERM or Ctrl-C (SIGINT) ended the run after saving a checkpoint it resumes from. Exit 128 + the signal."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # what shells report for a process ended by that signal: 143, 130


class Terminated(BaseException):
    """SIGTERM outside the training loop (parsing, setting up, validate, test, predict): raised wherever the program
    is, as Ctrl-C raises KeyboardInterrupt, and like it not an Exception, so that no `except Exception` on the way
    takes it for an error of its own. The message says what was saved. Exit 143."""


def first_line(error: BaseException) -> str:
    """What went wrong, in one line: the error's first line, with the next where the first only announces it
    (`Error(s) in loading state_dict:`); its type's name where it says nothing."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()] or [type(error).__name__]
    return f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]


def main(command: Callable[[], T]) -> T:
    """Run `command`; on failure exit as a scheduler or a shell script expects: 1 failed, 2 bad input, 130/143."""
    full = _BackgroundDiskFull()
    try:
        result = command()
        if full.error:  # a writer thread's only trace: the command went on without what it wrote
            raise full.error
        return result
    except UsageError as error:
        if _launched_other_rank():
            time.sleep(OTHER_RANKS_WAIT_S)
            sys.exit(2)
        if isinstance(error, TrialRefusal):  # its worker says it
            sys.exit(2)
        _exit(f"error: {error}", 2)
    except (Diverged, Failed) as error:
        _exit(f"error: {error}", 1)
    except Stopped as error:
        _exit(str(error), error.exit_code)
    except Terminated as error:
        _exit(str(error) or "stopped by SIGTERM", 128 + signal.SIGTERM)
    except KeyboardInterrupt:  # Ctrl-C outside training (parsing, test, predict): nothing to save
        _exit("stopped by Ctrl-C", 128 + signal.SIGINT)
    except OSError as error:  # a full disk under a writer that is not ours (a logger's event file, a library's log)
        if error.errno not in NO_SPACE:
            raise
        _exit(f"error: disk full writing {error.filename or 'a file'}; {FREE_SOME_SPACE}", 1)
    except SystemExit as exit:  # Lightning ends a Ctrl-C it caught itself with sys.exit(1)
        if isinstance(exit.__context__, KeyboardInterrupt):
            _exit("stopped by Ctrl-C", 128 + signal.SIGINT)
        raise
    finally:
        threading.excepthook = full.previous


class _BackgroundDiskFull:
    """A full disk in a background writer (TensorBoard's event-file thread) would print a thread's traceback, then
    reach the main thread as the same error at the writer's next call. Kept quiet here, said once by `main`."""

    def __init__(self) -> None:
        self.error: OSError | None = None
        self.previous = threading.excepthook
        threading.excepthook = self

    def __call__(self, args) -> None:
        if isinstance(args.exc_value, OSError) and args.exc_value.errno in NO_SPACE:
            self.error = self.error or args.exc_value
        else:
            self.previous(args)


def _launched_other_rank() -> bool:
    """A rank other than zero of a job that torchrun or srun started, every rank with the same command: its refusal
    is rank zero's, said once by rank zero."""
    rank = os.environ.get("RANK") if "TORCHELASTIC_RUN_ID" in os.environ else os.environ.get("SLURM_PROCID")
    return rank not in (None, "0")


def _exit(message: str, code: int) -> None:
    print(message, file=sys.stderr, flush=True)
    sys.exit(code)
