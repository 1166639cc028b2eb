"""The fleet's broker: Debian's redis-server as a process of the coordinator's own, on 127.0.0.1,
a free port and a random password, with nothing written to disk beyond its temp folder; stopped
when the fleet run ends. Lab hosts reach it only through their SSH sessions (clientlab/fleet/sessions.py)."""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self

from clientlab.errors import LabError

REDIS_SERVER = "redis-server"
START_TIMEOUT_S = 10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(port: int, password: str, folder: Path) -> str:
    # no RDB snapshots, no AOF: the queue lives as long as the fleet run and no longer
    return "\n".join([
        "bind 127.0.0.1", f"port {port}", "protected-mode yes", f"requirepass {password}",
        'save ""', "appendonly no", f"dir {folder}", "daemonize no", "loglevel warning",
        f"logfile {folder / 'redis.log'}", "databases 1", "",
    ])


class Broker:
    """redis-server for one fleet run: `url_for(path)` is its address as a lab host sees it (the
    Unix socket its SSH session forwards to this port)."""

    def __init__(self) -> None:
        if shutil.which(REDIS_SERVER) is None:
            raise LabError("the fleet's broker needs Debian's redis-server (apt install redis-server; "
                           "setup.sh installs it)")
        self.folder = Path(tempfile.mkdtemp(prefix="clientlab-broker-"))
        self.port, self.password = _free_port(), secrets.token_hex(24)
        config = self.folder / "redis.conf"
        config.write_text(_config(self.port, self.password, self.folder))
        config.chmod(0o600)   # it holds the password
        self._proc = subprocess.Popen([REDIS_SERVER, str(config)], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                log = (self.folder / "redis.log").read_text(errors="replace") if (self.folder / "redis.log").exists() else ""
                said = (self._proc.stderr.read().decode(errors="replace") + log).strip().splitlines()
                raise LabError(f"the fleet's broker (redis-server) exited {self._proc.returncode}"
                               + (f": {said[-1]}" if said else ""))
            if self.ping():
                return
            time.sleep(0.05)
        raise LabError(f"the fleet's broker (redis-server) did not answer within {START_TIMEOUT_S} s")

    def ping(self) -> bool:
        """True when the broker answers an authenticated PING."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(f"AUTH {self.password}\r\nPING\r\n".encode())
                answer = b""
                while answer.count(b"\r\n") < 2:
                    chunk = s.recv(256)
                    if not chunk:
                        return False
                    answer += chunk
                return answer == b"+OK\r\n+PONG\r\n"
        except OSError:
            return False

    def local_url(self) -> str:
        """The broker as the coordinator reaches it."""
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def url_for(self, socket_path: str) -> str:
        """The broker as a lab host reaches it: its SSH session's forwarded Unix socket."""
        return f"redis+socket://:{self.password}@{socket_path}"

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc.stderr:
            self._proc.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
