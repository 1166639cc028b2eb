"""The bench server's process and its control endpoint (docs/bench-server.md)."""

from __future__ import annotations

import dataclasses
import secrets
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

from clientlab import paths
from clientlab.errors import LabError
from clientlab.measuring import affinity
from clientlab.servers import binary as server_binary
from clientlab.servers.control import ControlClient, first_json_line, stop
from clientlab.servers.side import Endpoint, local_cpu_ns

SECRET_HEADER = "X-Clientlab-Secret"


class BenchControl:
    """The bench server's control endpoint, wherever the server runs: `_control` talks to it and
    `endpoint` is where drivers reach the server."""

    _control: ControlClient
    endpoint: Endpoint

    def configure(self, **settings: Any) -> None:
        self._control.request("POST", "/config", settings)

    def reset(self) -> None:
        self._control.request("POST", "/reset")

    def counters(self, reset: bool = False) -> dict[str, Any]:
        return self._control.request("GET", "/counters" + ("?reset=1" if reset else ""))

    def faults(self, reset: bool = False) -> dict[str, Any]:
        """The fault origins' ledger (server/internal/faults/faults.go): every request that reached them, with the
        credentials headers it carried, and a count per path."""
        return self._control.request("GET", "/faults" + ("?reset=1" if reset else ""))

    def progress(self) -> dict[str, Any]:
        return self.counters()

    def rebind(self) -> Endpoint:
        """Move the public ports to fresh kernel-chosen ones (the old listeners close; connections
        already open keep being served), so that no TIME_WAIT or port state carries over from one
        trial to the next. Returns (and keeps) the new endpoint."""
        ports = self._control.request("POST", "/rebind")
        self.endpoint = dataclasses.replace(self.endpoint, http_port=ports["http"],
                                            https_port=ports.get("https", self.endpoint.https_port),
                                            h3_port=ports.get("h3", self.endpoint.h3_port))
        return self.endpoint

    def digest(self, path: str) -> dict[str, Any]:
        return self._control.request("GET", "/digest?path=" + quote(path, safe=""))

    def server_cpu_ns(self) -> int:
        """The server's own CPU time so far, as it reads it (getrusage)."""
        return int(self._control.request("GET", "/cpu")["cpu_ns"])


class BenchServer(BenchControl):
    """Starts `clientlab-server` (on loopback, or inside the network lab), talks to its control port, stops it.

    `wrap` prefixes the server's argv (the network lab's `ip netns exec`); `control_host` is where
    the lab reaches the control port when drivers must not (default: `host`).

    The control port takes only requests that carry this run's secret: the lab makes it, gives it
    to the server as the first line on its stdin (never in argv or the environment, which other
    processes can read in /proc) and sends it with every control request. Drivers never get it.
    """

    driver_prefix: list[str] = []  # argv prefix for drivers: none on loopback

    def __init__(self, host: str = "127.0.0.1", cpu: int | None = None, binary: Path | None = None,
                 control_host: str | None = None, wrap: list[str] | None = None, max_conns: int = 0,
                 public_host: str | None = None):
        if binary is None:
            binary = server_binary.current()
        elif not binary.exists():
            raise LabError(f"bench server not built: {binary} is missing (run ./setup.sh)")
        tls = paths.tls_dir()
        if not (tls / "server.pem").exists():
            raise LabError(f"lab certificates missing in {tls} (run ./setup.sh)")
        self.host = host
        control_host = control_host or host
        argv = [*(wrap or []), str(binary), "--listen", host, "--control-listen", control_host,
                "--tls-cert", str(tls / "server.pem"), "--tls-key", str(tls / "server-key.pem")]
        if (tls / "ca-key.pem").exists():  # the CA signs the certificates the fault origins' clients must refuse
            argv += ["--tls-ca", str(tls / "ca.pem"), "--tls-ca-key", str(tls / "ca-key.pem")]
        if max_conns:
            argv += ["--max-conns", str(max_conns)]
        secret = secrets.token_urlsafe(32)
        self.proc = subprocess.Popen(affinity.pinned(argv, cpu), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.proc.stdin is not None
        try:  # the server reads it before it listens; stdin stays open: the server exits when it closes
            self.proc.stdin.write(secret.encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            pass  # it exited already: first_json_line reports why
        affinity.pin_late(self.proc.pid, cpu)
        self.info = first_json_line(self.proc, "bench server")
        if self.info.get("type") != "listening":
            stop(self.proc)
            raise LabError(f"bench server did not start: it printed {self.info!r}")
        self.endpoint = Endpoint(
            host=public_host or host, http_port=self.info["http"], https_port=self.info["https"],
            ca_file=tls / "ca.pem", h3_port=self.info.get("h3", 0),
        )
        self._control = ControlClient("bench server", control_host, self.info["control"], self.proc,
                                      headers={SECRET_HEADER: secret})

    def describe(self) -> None:
        return None  # loopback: no network to describe

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_reason(self) -> str:
        return f"it exited with code {self.proc.poll()}"

    def cpu_ns(self) -> int | None:
        return local_cpu_ns(self.proc.pid)

    def local_pids(self) -> list[int]:
        return [self.proc.pid]

    def stop(self) -> None:
        self._control.close()
        stop(self.proc)

    def __enter__(self) -> "BenchServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
