"""Files that are whole or absent: written beside their target, fsynced, renamed into place, the folder fsynced."""

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_atomically(path: Path, content: bytes | str | Callable[[BinaryIO], object]) -> None:
    """Write `content` (bytes, text, or a function that writes to the open file) to `path`: readers, and a kill at any
    moment, see the old file or the new one, never half of one.

    The temp file lives in `path`'s own folder (a rename across filesystems would be a copy); on Linux it has no name
    until it is complete (O_TMPFILE), so a killed writer leaves nothing behind. The OS's errors (a full disk, a
    read-only folder) pass to the entry point, which names the path (errors.py); the previous file is kept.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode() if isinstance(content, str) else content
    write = content if callable(content) else lambda file: file.write(data)
    folder = os.open(path.parent, os.O_RDONLY)
    temp, named = f".{path.name}.{os.getpid()}.tmp", False
    try:
        try:
            fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o644, dir_fd=folder)
        except (AttributeError, OSError):  # not Linux, or a filesystem without O_TMPFILE
            fd, named = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644, dir_fd=folder), True
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
            if not named:  # the finished file gets a name only now: a kill before this line leaves no trace
                os.link(f"/proc/self/fd/{file.fileno()}", temp, dst_dir_fd=folder)
                named = True
        os.replace(temp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        named = False
        os.fsync(folder)  # the rename itself durable
    except OSError as error:
        error.filename = error.filename if error.filename not in (None, ".", temp) else str(path)
        raise
    finally:
        if named:
            os.unlink(temp, dir_fd=folder)
        os.close(folder)
