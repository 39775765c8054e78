"""Which process is doing something, as a file records it, and whether that process still lives: what a run's
summary.json (RunSummary) and a sweep's journal (a worker's trials) keep of the process writing them, so that another
command can tell a process killed with -9, which recorded nothing, from one still at work.

A process is its machine's host name and boot, its pid and the moment it started, so that a pid the system gave to
another process since is not taken for it. Only processes of this machine are judged: another machine's are not ours
to see. Nothing here needs torch: the `runs` table reads it.
"""

import os
import socket
from pathlib import Path

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def this_process() -> dict:
    return {"host": socket.gethostname(), "boot": _boot(), "pid": os.getpid(), "started": started(os.getpid())}


def is_dead(process: dict) -> bool:
    """Whether the process `this_process()` recorded is gone; False where it cannot be told (another machine's, or a
    machine without /proc)."""
    if process.get("host") != socket.gethostname():
        return False  # another machine's process: its processes are not ours to see
    if process.get("boot") != _boot():
        return True  # a process from before this machine restarted
    return started(process.get("pid")) != process.get("started")  # gone, or its pid now another process's


def _boot() -> str | None:
    return BOOT_ID.read_text().strip() if BOOT_ID.is_file() else None


def started(pid) -> int | None:
    """When the process `pid` started, in clock ticks since boot (/proc/<pid>/stat, field 22); None if none lives.
    A process that has ended but is not yet reaped (a zombie) counts as gone."""
    try:
        fields = Path(f"/proc/{int(pid)}/stat").read_text().rpartition(")")[2].split()
    except (OSError, TypeError, ValueError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])
