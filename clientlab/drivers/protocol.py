"""The lab's side of the driver protocol: start a driver, exchange JSON lines, stop it.

Every way a driver can misbehave (crash, hang, garbage or a flood on stdout, a wrong message)
ends in a DriverFault whose message says what happened and shows the driver's last stderr
lines. The lab never blocks on a driver without a deadline.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from clientlab.drivers.job import PROTOCOL_VERSION
from clientlab.measuring import affinity

MAX_LINE = 64 * 1024 * 1024      # one protocol line (a report of many responses)
MAX_STDOUT = 256 * 1024 * 1024   # everything a driver may print in its life
STDERR_KEEP = 20                 # stderr lines kept for failure messages


class DriverFault(Exception):
    """The driver broke the protocol or died; the cell fails with this message."""


class DriverTimeout(DriverFault):
    """The driver sent nothing within the time it was given."""


# What would send a client elsewhere or make it trust other certificates than the job's: kept out
# of every driver's environment, so that a driver keeps its library's defaults (which read them)
# and still does exactly what the job says (docs/driver-protocol.md §8)
REDIRECTING_ENV = frozenset({
    "http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY",
    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
    "DENO_CERT", "DENO_TLS_CA_STORE",
})


def driver_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (the lab's own environment by default) without REDIRECTING_ENV."""
    return {k: v for k, v in (os.environ if base is None else base).items() if k not in REDIRECTING_ENV}


class DriverProcess:
    """One running driver: a process group with JSON-lines stdin/stdout and a captured stderr.
    Its environment is `env`, or the lab's, either without REDIRECTING_ENV."""

    def __init__(self, argv: list[str], cwd: Path, cpu: int | None = None, env: dict | None = None):
        self.argv = argv
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                affinity.pinned(argv, cpu),
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                process_group=0,  # so a kill reaches every child it started
                env=driver_env(env),
            )
        except OSError as exc:
            raise DriverFault(f"cannot start {argv[0]}: {exc}") from exc
        affinity.pin_late(self.proc.pid, cpu)
        self._lines: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=STDERR_KEEP)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read_stdout(self) -> None:
        total = 0
        stream = self.proc.stdout
        assert stream is not None
        while True:
            line = stream.readline(MAX_LINE + 1)
            if not line:
                self._lines.put(("eof", None))
                return
            total += len(line)
            if len(line) > MAX_LINE or total > MAX_STDOUT:
                self._lines.put(("flood", f"wrote more than {MAX_LINE if len(line) > MAX_LINE else MAX_STDOUT} bytes on stdout"))
                self._drain(stream)
                return
            self._lines.put(("line", line))

    @staticmethod
    def _drain(stream) -> None:  # noqa: ANN001 - a binary pipe
        while stream.read(1 << 20):
            pass

    def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        for raw in iter(lambda: stream.readline(8192), b""):
            self._stderr.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def fault(self, what: str, kind: type[DriverFault] = DriverFault) -> DriverFault:
        """A fault whose message ends with the driver's last stderr lines."""
        tail = self.stderr_tail()
        return kind(what + (f"\n--- driver stderr (last lines) ---\n{tail}" if tail else ""))

    def send(self, message: dict) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            code = self.proc.poll()
            raise self.fault(f"driver closed its stdin (exit code {code}): {exc}") from exc

    def receive(self, expected: set[str], timeout: float) -> dict:
        """The next message; its type must be in `expected` (or unsupported/error, returned as is)."""
        try:
            kind, value = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise self.fault(f"timed out after {timeout:.0f} s waiting for {'/'.join(sorted(expected))}",
                             DriverTimeout) from None
        if kind == "eof":
            code = self._wait_exit(2.0)
            if code is not None:  # its last stderr lines may still be in the pipe: read them first
                self._stderr_reader.join(timeout=1.0)
            raise self.fault(f"driver exited (code {code}) before sending {'/'.join(sorted(expected))}")
        if kind == "flood":
            raise self.fault(f"driver {value}")
        try:
            message = json.loads(value)
        except ValueError:
            text = value[:200].decode("utf-8", "replace").rstrip()
            raise self.fault(f"driver printed a line that is not a protocol message: {text!r}") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise self.fault(f"driver sent JSON without a 'type': {str(message)[:200]}")
        if message["type"] not in expected | {"unsupported", "error"}:
            raise self.fault(f"driver sent '{message['type']}' where {'/'.join(sorted(expected))} was expected")
        return message

    def hello(self, timeout: float) -> dict:
        self.send({"type": "hello", "protocol": PROTOCOL_VERSION})
        message = self.receive({"hello"}, timeout)
        if message["type"] != "hello":
            raise self.fault(f"driver answered hello with {message['type']}: {message.get('message') or message.get('reason')}")
        if message.get("protocol") != PROTOCOL_VERSION:
            raise self.fault(f"driver speaks protocol {message.get('protocol')!r}, the lab speaks {PROTOCOL_VERSION}")
        versions = message.get("versions")
        if not isinstance(versions, dict):
            raise self.fault("driver's hello has no 'versions' object")
        return message

    def _wait_exit(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self, grace: float = 3.0) -> None:
        """End of stdin, a short grace period, then SIGKILL to the whole process group."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except OSError:
                pass
            if self._wait_exit(grace) is None:
                self.kill()
        self.kill()  # children left behind in the group

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._wait_exit(5.0)
