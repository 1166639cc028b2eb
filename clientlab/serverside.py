"""What the runner needs of the server side of a run, whichever it is: the bench server on
loopback (server.BenchServer), the network lab around it (netlab.lab.NetLab), or nginx serving
the same files (nginx.StaticServer)."""

from __future__ import annotations

import subprocess
from typing import Any, Protocol

from clientlab.job import Endpoint


class ServerSide(Protocol):
    endpoint: Endpoint            # where drivers reach it
    driver_prefix: list[str]      # argv prefix for drivers (the client's namespace on the network lab)
    proc: subprocess.Popen        # the server process: its CPU is read per trial, its limits raised

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
