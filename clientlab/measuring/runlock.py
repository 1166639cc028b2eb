"""One measuring run per machine: `clientlab run`, `experiment` and `behave` hold an exclusive lock.

Two runs at once would disturb each other's numbers (CPU, memory bandwidth, the loopback
device), so the lock is per machine, not per data directory: a fixed system path
(/run/lock/clientlab.lock, or /tmp/clientlab.lock where /run/lock cannot be written;
CLIENTLAB_LOCK names another file). It is an flock(2) on that file: the kernel drops it when
the holder exits in any way, SIGKILL included, so a dead run never leaves the lab locked.
The holder writes who it is into the file (pid, command, when it started) for the one waiting.
Commands that only read (show, drivers, scenarios, report, ...) take no lock.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Callable

from clientlab.errors import LabError, shown

LOCK_ENV = "CLIENTLAB_LOCK"
SYSTEM_DIRS = (Path("/run/lock"), Path("/tmp"))
LOCK_NAME = "clientlab.lock"


class LabBusy(LabError):
    """Another measuring run holds the lab (and the caller would not wait)."""


def lock_path(name: str = LOCK_NAME, env: str | None = LOCK_ENV) -> Path:
    """The machine's lock file: $CLIENTLAB_LOCK, else /run/lock/clientlab.lock, else /tmp's.
    Another `name` with no `env` is a lock of the machine's own, never moved (the network lab's)."""
    if env and os.environ.get(env):
        return Path(os.environ[env])
    for folder in SYSTEM_DIRS:
        if folder.is_dir() and os.access(folder, os.W_OK | os.X_OK):
            return folder / name
    return SYSTEM_DIRS[-1] / name


def _open(path: Path) -> tuple[int, bool]:
    """(fd, writable). Another user's lock file in a sticky folder may only open read-only
    (fs.protected_regular); flock works on that too, the holder's details are then not written."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
    except PermissionError:
        try:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW), False
        except OSError as exc:
            raise LabError(f"cannot open the run lock {shown(path)}: {exc.strerror} "
                           f"(set {LOCK_ENV} to a file you can write)") from None
    except OSError as exc:
        raise LabError(f"cannot open the run lock {shown(path)}: {exc.strerror} "
                       f"(set {LOCK_ENV} to a file you can write)") from None
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o666)  # other users' runs must be able to take it too
    except OSError:
        pass
    return fd, True


def holder(path: Path | None = None) -> dict | None:
    """What the lock file says about the run holding it (read without the lock: best effort)."""
    try:
        text = (path or lock_path()).read_text()
        info = json.loads(text) if text.strip() else None
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    pid = info.get("pid")
    if isinstance(pid, int) and pid > 0:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None  # left by a run that was killed; the new holder has not written yet
        except PermissionError:
            pass
    return info


def describe(info: dict | None) -> str:
    """'pid 1234 (clientlab run -d c-libcurl) since 2025-11-23 16:01:02'."""
    if not info:
        return "another run (it did not say which)"
    since = info.get("started")
    when = dt.datetime.fromtimestamp(since).strftime("%Y-%m-%d %H:%M:%S") if isinstance(since, (int, float)) else "?"
    return f"pid {info.get('pid', '?')} ({info.get('command', '?')}) since {when}"


class RunLock:
    """The machine's run lock, taken for one command's life (released on close or exit)."""

    def __init__(self, command: str | None = None, path: Path | None = None, what: str = "the lab"):
        self.path = path or lock_path()
        self.what = what   # what the lock guards, as its messages name it
        self.command = command or " ".join(["clientlab", *sys.argv[1:]])
        self.fd: int | None = None

    def acquire(self, wait: bool = True, on_wait: Callable[[str], None] | None = None,
                poll_s: float = 0.25) -> None:
        """Take the lock. Held by another run: with `wait`, say who holds it (on_wait) and wait
        until it is free; without, raise LabBusy naming the holder."""
        fd, writable = _open(self.path)
        try:
            if not self._try(fd):
                info = holder(self.path)
                if not wait:
                    raise LabBusy(f"another measuring run holds {self.what}: {describe(info)}; "
                                  f"lock {shown(self.path)}")
                if on_wait:
                    on_wait(f"waiting for {self.what}: another measuring run holds it, {describe(info)} "
                            f"(lock {shown(self.path)}; Ctrl-C to give up)")
                while not self._try(fd):
                    time.sleep(poll_s)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        if writable:
            self._write_holder()

    @staticmethod
    def _try(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _write_holder(self) -> None:
        info = {"pid": os.getpid(), "command": self.command, "started": time.time(),
                "host": socket.gethostname()}
        data = (json.dumps(info) + "\n").encode()
        try:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, data, 0)
        except OSError:
            pass  # the lock holds all the same; the one waiting reads less about it

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.ftruncate(self.fd, 0)
        except OSError:
            pass
        os.close(self.fd)  # closing the descriptor drops the flock
        self.fd = None

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()
