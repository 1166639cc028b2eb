"""The bench server's process and its control endpoint (docs/bench-server.md)."""

from __future__ import annotations

import http.client
import json
import os
import select
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

from clientlab import paths
from clientlab.errors import LabError
from clientlab.job import Endpoint

START_TIMEOUT_S = 15


class BenchServer:
    """Starts `clientlab-server` on loopback, talks to its control port, stops it."""

    def __init__(self, host: str = "127.0.0.1", cpu: int | None = None, binary: Path | None = None):
        binary = binary or paths.server_binary()
        if not binary.exists():
            raise LabError(f"bench server not built: {binary} is missing (run ./setup.sh)")
        tls = paths.tls_dir()
        if not (tls / "server.pem").exists():
            raise LabError(f"lab certificates missing in {tls} (run ./setup.sh)")
        self.host = host
        self.proc = subprocess.Popen(
            [str(binary), "--listen", host,
             "--tls-cert", str(tls / "server.pem"), "--tls-key", str(tls / "server-key.pem")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        if cpu is not None:
            try:
                os.sched_setaffinity(self.proc.pid, {cpu})
            except OSError:
                pass
        self.info = self._read_listening()
        self.endpoint = Endpoint(
            host=host, http_port=self.info["http"], https_port=self.info["https"],
            ca_file=tls / "ca.pem",
        )
        self._control: http.client.HTTPConnection | None = None

    def _read_listening(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else b""
        try:
            info = json.loads(line)
            assert info.get("type") == "listening"
            return info
        except (ValueError, AssertionError):
            self.stop()
            err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.stderr else ""
            raise LabError(f"bench server did not start (first line {line[:200]!r})\n{err}") from None

    # -- control endpoint -------------------------------------------------------------------

    def _request(self, method: str, path: str, body: dict | None = None) -> Any:
        for attempt in (1, 2):  # one retry on a fresh connection: the old one may have been closed
            if self._control is None:
                self._control = http.client.HTTPConnection(self.host, self.info["control"], timeout=60)
            try:
                payload = json.dumps(body).encode() if body is not None else None
                self._control.request(method, path, body=payload,
                                      headers={"Content-Type": "application/json"} if payload else {})
                response = self._control.getresponse()
                data = response.read()
                if response.status != 200:
                    raise LabError(f"bench server control {method} {path}: {response.status} {data[:200]!r}")
                return json.loads(data) if data else None
            except (OSError, http.client.HTTPException) as exc:
                self._control.close()
                self._control = None
                if attempt == 2 or self.proc.poll() is not None:
                    raise LabError(f"bench server control endpoint failed ({exc}); server exit code {self.proc.poll()}") from exc
        return None

    def configure(self, **settings: Any) -> None:
        self._request("POST", "/config", settings)

    def reset(self) -> None:
        self._request("POST", "/reset")

    def counters(self, reset: bool = False) -> dict[str, Any]:
        return self._request("GET", "/counters" + ("?reset=1" if reset else ""))

    def digest(self, path: str) -> dict[str, Any]:
        return self._request("GET", "/digest?path=" + quote(path, safe=""))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self._control is not None:
            self._control.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "BenchServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

