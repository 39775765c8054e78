"""Which worker runs a trial, and whether that worker still lives: what a journal file has instead of RDBStorage's
heartbeat (Optuna 5.1's JournalStorage implements none, and its `fail_stale_trials` does nothing on it).

Each worker marks the trial it starts (user attr "worker": this machine's host name and boot, the worker's pid and
the moment that process started, so a pid the system gave to another process since is not taken for it). Another
worker on the same machine finds the trial RUNNING while its worker's process is gone: it fails the trial and queues
its values again, as the heartbeat's callback does on an RDB. A trial whose worker died before it could mark it is
judged the same way once `grace_period` seconds have passed since it started. Trials of workers on other machines
are never judged: a journal file is for one machine; an RDB's heartbeat serves several.
"""

import datetime
import os
import socket
from pathlib import Path

import optuna
from optuna.trial import TrialState

KEY = "worker"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def mark(trial: optuna.Trial) -> None:
    """Record this worker as the one running `trial` (its number too: a retried trial inherits the user attrs)."""
    trial.set_user_attr(KEY, {"trial": trial.number, **_this_process()})


def fail_trials_of_dead_workers(study: optuna.Study, grace_period: float, retry) -> list[int]:
    """Fail each RUNNING trial whose worker on this machine is gone, then `retry(study, trial)`: the numbers failed.
    Two workers may judge the same trial at once: the journal applies the first FAIL, the other's tell is refused."""
    now, failed = datetime.datetime.now(), []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = trial.user_attrs.get(KEY)
        if isinstance(worker, dict) and worker.get("trial") == trial.number:
            if not _dead(worker):
                continue
        elif trial.datetime_start and (now - trial.datetime_start).total_seconds() < grace_period:
            continue  # just started: its worker marks it in a moment
        try:
            study.tell(trial.number, state=TrialState.FAIL)
        except (optuna.exceptions.UpdateFinishedTrialError, ValueError):  # another worker failed it first
            continue
        failed.append(trial.number)
        retry(study, study.get_trials(deepcopy=False)[trial.number])
    return failed


def _this_process() -> dict:
    return {"host": socket.gethostname(), "boot": _boot(), "pid": os.getpid(), "started": _started(os.getpid())}


def _dead(worker: dict) -> bool:
    if worker.get("host") != socket.gethostname():
        return False  # another machine's worker: its processes are not ours to see
    if worker.get("boot") != _boot():
        return True  # a worker from before this machine restarted
    return _started(worker.get("pid")) != worker.get("started")  # gone, or its pid now another process's


def _boot() -> str | None:
    return BOOT_ID.read_text().strip() if BOOT_ID.is_file() else None


def _started(pid) -> int | None:
    """When the process `pid` started, in clock ticks since boot (/proc/<pid>/stat, field 22); None if none lives.
    A process that has ended but is not yet reaped (a zombie) counts as gone."""
    try:
        fields = Path(f"/proc/{int(pid)}/stat").read_text().rpartition(")")[2].split()
    except (OSError, TypeError, ValueError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])
