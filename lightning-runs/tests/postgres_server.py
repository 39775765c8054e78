"""A real PostgreSQL server for the sweep tests (test_sweep_storages.py), started on this machine from Debian's
`postgresql` package (a CI installs it): a data folder of its own, a free loopback port, trust authentication, stopped
at the end. Where no server binaries are installed, or the server does not start, the tests that need it skip and say
why."""

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tiny_launchers import free_port

# initdb and postgres refuse to run as root (a server must not own the machine): as root, they run as this user.
UNPRIVILEGED = "nobody"
TIMEOUT_S = 60


class Unavailable(Exception):
    """No server can run here; the message says why (and is the tests' skip reason)."""


def binaries() -> Path:
    """The folder of initdb, pg_ctl and postgres: Debian keeps them per version, off PATH; the newest wins."""
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    on_path = shutil.which("initdb")
    for folder in [*reversed(folders), *([str(Path(on_path).resolve().parent)] if on_path else [])]:
        if all((Path(folder) / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return Path(folder)
    raise Unavailable("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql")


@dataclass
class Server:
    bin: Path
    home: Path  # the data folder, the log and the unix socket
    port: int

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"  # psycopg 3, named

    def createdb(self, database: str) -> str:
        """A new, empty database on this server: its SQLAlchemy URL."""
        self._run([str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", database])
        return self.url(database)

    def password_role(self, role: str, password: str) -> None:
        """A role that logs in over TCP with `password` only (every other role keeps trust): its line goes first in
        pg_hba.conf, which the server reloads."""
        import sqlalchemy

        with sqlalchemy.create_engine(self.url("postgres")).connect() as connection:
            connection.execute(sqlalchemy.text(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'"))
            connection.commit()
            hba = self.home / "data/pg_hba.conf"
            hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n{hba.read_text()}")
            connection.execute(sqlalchemy.text("SELECT pg_reload_conf()"))

    def stop(self) -> None:
        self._as_owner("pg_ctl", "-D", str(self.home / "data"), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.home, ignore_errors=True)

    def _as_owner(self, program: str, *args: str) -> subprocess.CompletedProcess:
        runuser = ["runuser", "-u", UNPRIVILEGED, "--"] if os.geteuid() == 0 else []
        return self._run([*runuser, str(self.bin / program), *args])

    def _run(self, command: list[str]) -> subprocess.CompletedProcess:
        result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
        if result.returncode != 0:
            log = (self.home / "log").read_text()[-1500:] if (self.home / "log").is_file() else ""
            program = next(Path(part).name for part in command if part.startswith(str(self.bin)))
            raise Unavailable(f"{program} failed: {result.stderr.strip()[-800:]} {log}".strip())
        return result


def start() -> Server:
    """initdb into a fresh folder, then the server on a free port of 127.0.0.1 (fsync off: a test's data is
    thrown away), waited for until it accepts connections."""
    server = Server(binaries(), Path(tempfile.mkdtemp(prefix="postgres-")), free_port())
    if os.geteuid() == 0:
        owner = pwd.getpwnam(UNPRIVILEGED)
        os.chown(server.home, owner.pw_uid, owner.pw_gid)
    data = str(server.home / "data")
    try:
        server._as_owner("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-p {server.port} -k {server.home} -c listen_addresses=127.0.0.1 -c fsync=off"
        server._as_owner("pg_ctl", "-D", data, "-l", str(server.home / "log"), "-w", "-o", options, "start")
    except Unavailable:
        postmaster = server.home / "data/postmaster.pid"
        if postmaster.exists():  # started, but not in time: not left behind
            os.kill(int(postmaster.read_text().split()[0]), signal.SIGKILL)
        shutil.rmtree(server.home, ignore_errors=True)
        raise
    return server
