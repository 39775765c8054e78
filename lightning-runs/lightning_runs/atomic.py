"""Files that are whole or absent: written beside their target, fsynced, renamed into place, the folder fsynced."""

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from lightning_runs.errors import FREE_SOME_SPACE, NO_SPACE, DiskFull, Failed

# A folder that takes no file: said as what it is, with nothing written (the temp file never got a name).
_NOT_WRITABLE = {errno.EROFS: "its file system is read-only", errno.EACCES: "permission denied"}


def write_atomically(path: Path, content: bytes | str | Callable[[BinaryIO], object]) -> None:
    """Write `content` (bytes, text, or a function that writes to the open file) to `path`: readers and a kill at
    any moment see the old file or the new one, never half of one.

    The temp file lives in `path`'s own folder (a rename across filesystems would be a copy); on Linux it has no
    name until it is complete (O_TMPFILE), so a killed writer leaves nothing behind either. A full disk, a read-only
    file system or a folder without write permission raises Failed saying so, with the previous file untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write = content if callable(content) else lambda file: file.write(_bytes(content))
    folder = os.open(path.parent, os.O_RDONLY)
    temp = f".{path.name}.{os.getpid()}.tmp"
    named = False
    try:
        try:
            fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o644, dir_fd=folder)
        except (AttributeError, OSError):  # not Linux, or a filesystem without O_TMPFILE
            fd, named = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644, dir_fd=folder), True
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
            if not named:
                # Give the finished file a name only now: a kill before this line leaves no trace.
                os.link(f"/proc/self/fd/{file.fileno()}", temp, dst_dir_fd=folder)
                named = True
        os.replace(temp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        named = False
        os.fsync(folder)  # make the rename itself durable
    except OSError as error:
        if error.errno in NO_SPACE:
            kept = f"the previous {path.name}, if any, is kept"
            raise DiskFull(f"disk full writing {path}; {kept}; {FREE_SOME_SPACE}") from None
        if error.errno in _NOT_WRITABLE:
            raise Failed(f"cannot write {path}: {_NOT_WRITABLE[error.errno]}; write it somewhere else") from None
        raise
    finally:
        if named:
            os.unlink(temp, dir_fd=folder)
        os.close(folder)


def _bytes(content: bytes | str) -> bytes:
    return content.encode() if isinstance(content, str) else content
