"""A stored run's status and time as `clientlab runs` and `show` say them: what the store knows of
its end (a run whose process was gone when the store was next opened is `killed`: the store
cannot tell a SIGKILL from an out-of-memory kill or a crash, only that the process went away
without recording its end), and its start, end and wall time. It reads the run's row (the
store's `run`), computes nothing but the wall time."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any


def status_words(run: Mapping[str, Any], here: str, short: bool = False) -> str:
    """The run's status, with what it rests on where it is not the run's own word: `killed`
    (its recorded process gone), and `running` on another host (whose process this machine
    cannot check). `here`: this machine's host name; `short`: without the pid (a table's)."""
    status = str(run.get("status"))
    host, pid = run.get("host"), run.get("pid")
    if status == "killed":
        return "killed: process gone" + (f", pid {pid} on {host}" if pid and host and not short else "")
    if status == "running" and host and host != here:
        return f"running on {host}, not checked from here"
    return status


def when(stamp: float | None) -> str:
    return dt.datetime.fromtimestamp(stamp, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if stamp else "-"


def wall(seconds: float) -> str:
    """1 h 02 min, 3 min 54 s, 48 s."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def times_line(run: Mapping[str, Any]) -> str:
    """started ..., ended ..., wall ...: the run's time by the store's clock (when the run was
    stored as started and as ended). A killed run's end is its last sign of life (its newest
    cell's start or finish), so its wall time is what it ran for, not when it was found gone."""
    start, end = run.get("started_at"), run.get("finished_at")
    if not start:
        return "started: not recorded"
    if not end:
        return f"started {when(start)}, not ended"
    same_day = when(start)[:10] == when(end)[:10]
    ended = when(end)[11:] if same_day else when(end)
    last = " (its last sign of life)" if run.get("status") == "killed" else ""
    return f"started {when(start)}, ended {ended}{last}, wall {wall(end - start)}"
