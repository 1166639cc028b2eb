"""The command line in real processes, for the tests of the lab's guards (input, exit codes, the
run lock, a killed run): a scratch data directory and a private run lock each."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from clientlab import paths
from tests.support import TESTDRIVERS

CLI = [sys.executable, "-m", "clientlab"]
# a quick cell of the reference test driver
QUICK = ["--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-p", "count=5", "--trials", "1",
         "--warmup", "0"]


def sigint_as_ctrl_c() -> None:
    """preexec_fn: the child takes SIGINT as Ctrl-C even when the test suite was started with
    SIGINT ignored (a background job of a non-interactive shell passes that on, and Python then
    installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class Lab:
    home: Path
    lock: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "CLIENTLAB_HOME": str(self.home), "CLIENTLAB_LOCK": str(self.lock), "COLUMNS": "200"}

    @property
    def db(self) -> Path:
        return self.home / "results.sqlite"

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run([*CLI, *args], capture_output=True, text=True, env=self.env, timeout=timeout,
                              cwd=paths.ROOT)

    def start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env, cwd=paths.ROOT, preexec_fn=sigint_as_ctrl_c)


@pytest.fixture
def lab(tmp_path) -> Lab:
    """A fresh data directory sharing the built server and certificates, and a lock of its own
    (other people's runs on this machine do not make these tests wait)."""
    home = tmp_path / "lab"
    home.mkdir()
    (home / "bin").symlink_to(paths.lab_home() / "bin")
    (home / "tls").symlink_to(paths.lab_home() / "tls")
    return Lab(home, tmp_path / "clientlab.lock")


def db_count(db: Path, sql: str) -> int:
    """The first column of `sql`'s first row in a lab's store; 0 while the store or its schema
    is not there yet (a run that is just starting)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute(sql).fetchone()[0] or 0
    except sqlite3.OperationalError:
        return 0


def wait_for(condition, timeout: float = 120, every: float = 0.1):  # noqa: ANN001
    """Poll `condition()` until it returns something true; that value, or AssertionError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"gave up waiting after {timeout} s")


def lines_while_waiting(proc: subprocess.Popen, timeout: float = 60) -> list[str]:
    """The stderr lines of a process that waits for a lock, up to the end of its message (the
    "(Ctrl-C to give up)" that closes it); the process is then killed."""
    import threading

    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
    try:
        wait_for(lambda: any("give up)" in line for line in lines), timeout=timeout)
    finally:
        proc.kill()
        proc.wait(30)
    return [line.rstrip("\n") for line in lines]


def descendants(pid: int) -> list[int]:
    """The processes `pid` started, and theirs (to end exactly those after a test)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found
