"""A scratch PostgreSQL cluster of Debian's packages, for tests and measurements: its own data
directory, 127.0.0.1 on a free port, a socket directory of its own; password auth over TCP."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

PASSWORD = "clientlab-test"
START_TIMEOUT_S = 60


def binaries() -> Path | None:
    """Debian's PostgreSQL programs (the newest installed), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ScratchCluster:
    """initdb, start, make databases, stop; root runs it as the `postgres` user (initdb refuses root)."""

    def __init__(self) -> None:
        bindir = binaries()
        if bindir is None:
            raise FileNotFoundError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)")
        self.bin = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="clientlab-pg-"))
        self.port = free_port()
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")

    def _as_owner(self, *command: str) -> subprocess.CompletedProcess:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{Path(command[0]).name} failed: {done.stderr or done.stdout}")
        return done

    def start(self) -> ScratchCluster:
        pwfile = self.dir / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if os.geteuid() == 0:
            shutil.chown(pwfile, "postgres", "postgres")
        self._as_owner(str(self.bin / "initdb"), "-D", str(self.dir / "data"), "-U", "postgres", "-E", "UTF8",
                       f"--pwfile={pwfile}", "--auth-host=scram-sha-256", "--auth-local=trust", "--no-sync")
        settings = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.dir} "
                    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._as_owner(str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-l", str(self.dir / "log"), "-w",
                       "-t", str(START_TIMEOUT_S), "-o", settings, "start")
        return self

    def url(self, database: str = "postgres", password: str = PASSWORD) -> str:
        return f"postgresql://postgres:{password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", password=PASSWORD,
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            self._as_owner(str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
