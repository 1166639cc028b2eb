"""Talking to the lab's own helper processes: their first stdout line, their HTTP control port.

The bench server, the lab DNS and the latency proxy all print one JSON line once they listen,
and all take JSON over a small HTTP control API that drivers are never given.
"""

from __future__ import annotations

import http.client
import json
import select
import subprocess
from typing import Any

from clientlab.errors import LabError

START_TIMEOUT_S = 15


def first_json_line(proc: subprocess.Popen, what: str, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
    """The JSON object a helper prints once it listens; LabError (with its stderr) if it does not."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    line = proc.stdout.readline() if ready else b""
    try:
        info = json.loads(line)
        if not isinstance(info, dict):
            raise ValueError
        return info
    except ValueError:
        stop(proc)
        err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
        raise LabError(f"{what} did not start (first line {line[:200]!r})\n{err}") from None


def stop(proc: subprocess.Popen, grace_s: float = 5) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class ControlClient:
    """JSON over HTTP/1.1 to one control port, on one kept-alive connection.

    `headers` go with every request (the bench server's control secret)."""

    def __init__(self, what: str, host: str, port: int, proc: subprocess.Popen | None = None,
                 headers: dict[str, str] | None = None):
        self.what, self.host, self.port, self.proc = what, host, port, proc
        self.headers = dict(headers or {})
        self._conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200,)) -> Any:
        for attempt in (1, 2):  # one retry on a fresh connection: the old one may have been closed
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                payload = json.dumps(body).encode() if body is not None else None
                headers = {**self.headers, **({"Content-Type": "application/json"} if payload else {})}
                self._conn.request(method, path, body=payload, headers=headers)
                response = self._conn.getresponse()
                data = response.read()
                if response.status not in ok:
                    raise LabError(f"{self.what} control {method} {path}: {response.status} {data[:200]!r}")
                try:
                    return json.loads(data) if data else None
                except ValueError:
                    return data.decode(errors="replace")  # a plain-text answer (e.g. a version)
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                exited = self.proc.poll() if self.proc is not None else None
                if attempt == 2 or exited is not None:
                    raise LabError(f"{self.what} control endpoint failed ({exc}); exit code {exited}") from exc
        return None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
