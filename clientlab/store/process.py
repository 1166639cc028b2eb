"""Which process runs a `running` run, and whether it is certainly gone (then the run was killed)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def process_start(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot): with the boot id, it tells a process
    from a later one that got the same pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def this_process() -> dict[str, Any]:
    """The columns of a run that name the process recording it."""
    pid = os.getpid()
    return {"pid": pid, "boot_id": boot_id(), "pid_start": process_start(pid), "host": socket.gethostname()}


def run_process_gone(row: Mapping[str, Any]) -> bool:
    """True when the process that ran a `running` run is certainly gone: another boot of this
    machine, no such pid, or a pid that now belongs to a process started later. A run of another
    host (a store on a shared disk, or a team store) is never taken for gone."""
    host, boot, start = row.get("host"), row.get("boot_id"), row.get("pid_start")
    if host is not None and host != socket.gethostname():
        return False
    if boot is not None and boot != boot_id():
        return True
    if not pid_alive(row["pid"]):
        return True
    now = process_start(row["pid"])
    return start is not None and now is not None and now != start


def pid_alive(pid: int | None) -> bool:
    """Whether `pid` is a live process: a zombie (it exited, its parent has not reaped it yet)
    answers signal 0 as a live one does, and records nothing more."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return process_state(pid) != "Z"


def process_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat (R, S, D, Z...), or None where it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2:].split()[0]
    except (OSError, ValueError, IndexError):
        return None
