"""Which process is doing something, as a file records it, and whether that process still lives: what a run's
summary.json (RunSummary) and a sweep's journal (a worker's trials) keep of the process writing them, so that another
command can tell a process killed with -9, which recorded nothing, from one still at work.

A process is its machine's host name and boot, its pid and the moment it started, so that a pid the system gave to
another process since is not taken for it. Only processes of this machine are judged: another machine's are not ours
to see. psutil reads them the same way on Linux and macOS. Nothing here needs torch: the `runs` table reads it.
"""

import os
import socket

import psutil

# Linux gives a process's start as ticks after boot, and psutil adds the boot time, which the clock's adjustments (NTP)
# move by up to a second between processes: times this close are the same moment. A pid reused within it is unheard of.
SAME_S = 1.0
GONE = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)  # ended, not yet reaped: gone


def this_process() -> dict:
    pid = os.getpid()
    return {"host": socket.gethostname(), "boot": psutil.boot_time(), "pid": pid, "started": started(pid)}


def is_dead(process: dict) -> bool:
    """Whether the process `this_process()` recorded is gone; False where that cannot be told: another machine's
    process, or a record of an older format (a boot id and clock ticks), judged by none."""
    boot, recorded = process.get("boot"), process.get("started")
    if process.get("host") != socket.gethostname() or not _moment(boot):
        return False
    if abs(boot - psutil.boot_time()) > SAME_S:
        return True  # a process from before this machine restarted
    now = started(process.get("pid"))
    return now is None or not _moment(recorded) or abs(now - recorded) > SAME_S  # ty: ignore[unsupported-operator]  # a number, by _moment: gone, or its pid another's


def started(pid) -> float | None:
    """When the process `pid` started (seconds since the epoch); None if none lives."""
    try:
        process = psutil.Process(int(pid))
        return None if process.status() in GONE else process.create_time()
    except (psutil.Error, TypeError, ValueError):
        return None


def _moment(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
