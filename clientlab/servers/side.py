"""What the runner needs of the server side of a run, whichever it is: the bench server on
loopback (bench.BenchServer), the network lab around it (netlab.lab.NetLab), nginx serving
the same files (nginx.StaticServer), or the bench server on a host of its own
(hosts.benchserver.ServerHost); and where drivers reach it (Endpoint)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from clientlab.measuring import cgroup


@dataclass(frozen=True)
class Endpoint:
    """Where drivers reach the bench server."""

    host: str
    http_port: int
    https_port: int
    ca_file: Path
    h3_port: int = 0  # HTTP/3 (UDP); 0: the server has none (an older one, nginx)


class ServerSide(Protocol):
    endpoint: Endpoint            # where drivers reach it
    driver_prefix: list[str]      # argv prefix for drivers (the client's namespace on the network lab)

    def cpu_ns(self) -> int | None:
        """The server's CPU time so far (user + system), read before and after each trial; None
        where it cannot be read."""

    def local_pids(self) -> list[int]:
        """The server's processes on this machine, whose descriptor limit a run with many
        connections raises; none for a server on another host."""

    def exit_reason(self) -> str:
        """Why the server is gone, once alive() is False (an exit code, a host that stopped answering)."""

    def configure(self, **settings: Any) -> None: ...

    def reset(self) -> None: ...

    def counters(self, reset: bool = False) -> dict[str, Any]:
        """What clients did since the last reset."""

    def progress(self) -> dict[str, Any]:
        """The counters as a stall watch reads them during a trial: a read that ends nothing."""

    def rebind(self) -> Endpoint | None:
        """A fresh port for the next trial, or None where this server side keeps its ports."""

    def describe(self) -> dict[str, Any] | None:
        """The network the run is on, to store with it; None on loopback."""

    def digest(self, path: str) -> dict[str, Any]: ...

    def alive(self) -> bool: ...

    def stop(self) -> None: ...


def local_cpu_ns(pid: int) -> int | None:
    """The CPU of a server process started here and of what it forked, from a control group of
    its own; None where the lab cannot make groups."""
    group = cgroup.group_of(pid, "server")
    return group.cpu().total_ns if group is not None else None
