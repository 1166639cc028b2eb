"""Limits for connection-heavy cells: open files, ephemeral ports, listen backlogs.

A cell with thousands of transfers in flight needs, on this one machine, a descriptor per
connection in the driver and another in the server, an ephemeral port per connection toward one
server port, and listen queues deep enough for a burst of connects. The lab raises what is short
for the cell (or a selfbench run) and puts every value back afterwards:

- RLIMIT_NOFILE (soft, and hard as root) of the lab itself — drivers and tools it starts inherit
  it — and of the running bench server (prlimit);
- net.core.somaxconn and net.ipv4.tcp_max_syn_backlog (listen backlog: Go's listeners and nginx's
  `backlog=` are cut to somaxconn);
- net.ipv4.ip_local_port_range (ports toward one server port).

Only values that are too small are changed; what could not be changed (not root, a read-only
/proc/sys) is reported in `Lifted.notes`, and the cell runs anyway.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


class Server(Protocol):
    """What the limits need of a server side: its processes on this machine."""

    def local_pids(self) -> list[int]: ...


THRESHOLD = 256          # at or below this many connections the defaults are plenty
SPARE_FDS = 1024         # files, pipes and listeners besides the connections
FDS_PER_CELL = 8         # the lab's ends of a live driver's pipes, its cgroup's files, scratch files
SYSCTL = Path("/proc/sys")


def _read(name: str) -> str | None:
    try:
        return (SYSCTL / name.replace(".", "/")).read_text().strip()
    except OSError:
        return None


def _write(name: str, value: str) -> bool:
    try:
        (SYSCTL / name.replace(".", "/")).write_text(value + "\n")
        return True
    except OSError:
        return False


@dataclass
class Lifted:
    """What was raised for a cell, to put back with restore()."""

    connections: int
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # name -> (before, after)
    notes: list[str] = field(default_factory=list)
    _rlimits: list[tuple[int, tuple[int, int]]] = field(default_factory=list)  # (pid, before); 0 = the lab
    _sysctls: list[tuple[str, str]] = field(default_factory=list)

    def restore(self) -> None:
        for name, before in reversed(self._sysctls):
            _write(name, before)
        for pid, before in reversed(self._rlimits):
            try:
                if pid == 0:
                    resource.setrlimit(resource.RLIMIT_NOFILE, before)
                else:
                    resource.prlimit(pid, resource.RLIMIT_NOFILE, before)
            except (OSError, ValueError):
                pass  # the process is gone, or the lab's own files now need the higher limit
        self._sysctls.clear()
        self._rlimits.clear()

    def __enter__(self) -> "Lifted":
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()


def needs(connections: int) -> dict[str, int]:
    """The least value of each limit for `connections` open at once."""
    # per process: a driver or a server holds one end of each connection
    return {"nofile": connections + SPARE_FDS, "somaxconn": min(max(connections, 4096), 65535),
            "tcp_max_syn_backlog": min(max(connections, 4096), 65535), "ports": connections + 2048}


def _raise_nofile(lifted: Lifted, pid: int, want: int) -> None:
    try:
        soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE) if pid else resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return
    if soft != resource.RLIM_INFINITY and soft < want:
        new_hard = hard if hard == resource.RLIM_INFINITY or hard >= want else want
        try:
            if pid:
                resource.prlimit(pid, resource.RLIMIT_NOFILE, (want, new_hard))
            else:
                resource.setrlimit(resource.RLIMIT_NOFILE, (want, new_hard))
        except (OSError, ValueError) as exc:
            # no right to raise the hard limit: as far as it goes
            if hard == resource.RLIM_INFINITY or hard <= soft:
                lifted.notes.append(f"RLIMIT_NOFILE of {'the lab' if not pid else f'pid {pid}'} stays {soft} "
                                    f"(wanted {want}: {exc})")
                return
            want = hard
            try:
                if pid:
                    resource.prlimit(pid, resource.RLIMIT_NOFILE, (want, hard))
                else:
                    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            except (OSError, ValueError):
                return
            lifted.notes.append(f"RLIMIT_NOFILE raised to its hard limit {hard} only (wanted more: {exc})")
        lifted._rlimits.append((pid, (soft, hard)))
        lifted.changed[f"nofile{'' if not pid else f' (pid {pid})'}"] = (soft, want)


def _raise_sysctl(lifted: Lifted, name: str, want: int) -> None:
    before = _read(name)
    if before is None or int(before.split()[0]) >= want:
        return
    if _write(name, str(want)):
        lifted._sysctls.append((name, before))
        lifted.changed[name] = (before, str(want))
    else:
        lifted.notes.append(f"{name} stays {before} (wanted {want}: not permitted)")


def _widen_ports(lifted: Lifted, want: int) -> None:
    name = "net.ipv4.ip_local_port_range"
    before = _read(name)
    if before is None:
        return
    low, high = (int(v) for v in before.split())
    if high - low + 1 >= want:
        return
    new_low = max(1024, min(low, 65535 - want + 1))
    value = f"{new_low} {max(high, 65535) if new_low == 1024 else 65535}"
    if _write(name, value):
        lifted._sysctls.append((name, before))
        lifted.changed[name] = (before, value)
    else:
        lifted.notes.append(f"{name} stays {before} (wanted {want} ports: not permitted)")


def lift_for_cells(cells: int) -> Lifted:
    """Raise the lab's own descriptor limit for `cells` driver processes alive at once: with the
    cells of a run (or an experiment's network) interleaved every cell keeps its process, and the
    lab holds the pipes to each (a survey's 423 cells need more than a usual soft limit of 1,024)."""
    lifted = Lifted(0)
    _raise_nofile(lifted, 0, cells * FDS_PER_CELL + SPARE_FDS)
    return lifted


def lift(connections: int, server: Server | None = None, pids: list[int] | None = None) -> Lifted:
    """Raise what `connections` open at once need (nothing at or below THRESHOLD); `server`'s
    process and `pids` get the descriptor limit too.
    The caller restores with `.restore()` (or uses it as a context manager)."""
    lifted = Lifted(connections)
    if connections <= THRESHOLD:
        return lifted
    want = needs(connections)
    _raise_nofile(lifted, 0, want["nofile"])
    targets = list(pids or [])
    if server is not None:
        targets += server.local_pids()
    for pid in targets:
        _raise_nofile(lifted, pid, want["nofile"])
    _raise_sysctl(lifted, "net.core.somaxconn", want["somaxconn"])
    _raise_sysctl(lifted, "net.ipv4.tcp_max_syn_backlog", want["tcp_max_syn_backlog"])
    _widen_ports(lifted, want["ports"])
    return lifted


def describe() -> dict[str, Any]:
    """The limits now (for reports)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {"nofile": [soft, hard], "somaxconn": _read("net.core.somaxconn"),
            "tcp_max_syn_backlog": _read("net.ipv4.tcp_max_syn_backlog"),
            "ip_local_port_range": _read("net.ipv4.ip_local_port_range"), "pid": os.getpid()}
