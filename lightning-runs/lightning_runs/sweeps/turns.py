"""A turn among a study's workers: while one holds it, no other opens the study, counts its trials or starts one, so
the workers together start exactly the trials the study still needs (counting, then starting, is not atomic in
Optuna's storage: two workers that count at once both start the last trial).

On a PostgreSQL or MySQL server the turn is a lock of the server's own, which every worker's machine sees (an advisory
lock, held by one connection); on a file (a journal, SQLite), a lock on the sweep's folder, which the workers of one
machine share. Either dies with the process that holds it: a worker killed mid-turn holds up no other."""

import fcntl
import hashlib
import os

import sqlalchemy
from sqlalchemy.pool import NullPool

# What each server calls its lock, a session's: it lasts until its connection closes. The key is derived from the
# study's name, so two studies take turns apart.
SERVER_LOCKS = {"postgresql": "SELECT pg_advisory_lock(:key)", "mysql": "SELECT GET_LOCK(:key, -1)"}


class Turn:
    """Taken with `take()`, given back with `give()`, or held over a `with` block; giving back a turn not held does
    nothing (the objective gives it back as soon as its trial is running, and the worker again as the block ends)."""

    def __init__(self, url: str, study: str, folder) -> None:
        self.folder = folder
        backend = sqlalchemy.engine.make_url(url).get_backend_name() if "://" in url else "file"
        self.lock = SERVER_LOCKS.get(backend)  # None: the folder's lock
        digest = hashlib.sha256(f"lightning-runs:{study}".encode()).digest()
        # PostgreSQL's key is a signed 64-bit integer; MySQL's a name of at most 64 characters.
        key = int.from_bytes(digest[:8], "big", signed=True) if backend == "postgresql" else digest.hex()[:40]
        self.key = {"key": key}
        # Connections of its own, outside Optuna's pool (NullPool: none kept open): the lock is its connection's, and
        # closing that gives it back, on the server too when this process dies.
        self.engine = sqlalchemy.create_engine(url, poolclass=NullPool) if self.lock else None
        self.held = None  # the open folder, or the server connection, while the turn is ours

    def take(self) -> None:
        if self.held is not None:
            return
        if self.engine is None:
            self.held = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(self.held, fcntl.LOCK_EX)
        else:
            self.held = connection = self.engine.connect()
            connection.execute(sqlalchemy.text(self.lock), self.key)  # ty: ignore[invalid-argument-type]  # a server's lock: a folder's turn never connects
            connection.commit()

    def __enter__(self) -> None:
        self.take()

    def __exit__(self, *exception) -> None:
        self.give()

    def give(self) -> None:
        held, self.held = self.held, None
        if isinstance(held, int):
            os.close(held)  # and with it the lock
        elif held is not None:
            held.close()  # the server's session ends (NullPool keeps none), and with it the lock
