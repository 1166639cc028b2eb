"""Runs to store in tests: a small finished run made through the Store's own API, and many of them
quickly (one document imported under new uids, a transaction each)."""

from __future__ import annotations

import uuid
from typing import Any

from clientlab.store.core import Store, Trial
from clientlab.store.transfer import import_run, run_document

MACHINE = {"cpu_model": "Test CPU", "cores": 2, "memory_gib": 4.0, "kernel": "6.1.0", "os": "Debian 12",
           "python": "3.11.2", "go": "go1.24", "hostname": "test-host"}
CONFIG = {"drivers": ["a", "b"], "scenarios": ["get-small"], "net": {"profile": "loopback", "asked": "loopback"}}


def finished_run(store: Store, cells: int = 2, trials: int = 3, status: str = "complete",
                 uid: str | None = None) -> int:
    run_id = store.start_run(MACHINE, CONFIG, uid=uid)
    for n in range(cells):
        cell_id = store.start_cell(run_id, f"driver-{n}", "get-small", {"count": 5}, "requests", ["why"] if n else None)
        for i in range(trials):
            store.add_trial(cell_id, Trial(kind="timed", idx=i, ok=True, wall_s=1.0 + i, user_s=0.5, sys_s=0.1,
                                           peak_rss_kb=1000, server={"requests": 5}, problems=None,
                                           noise={"steal": 0.0}, page_faults=3, wakeups=4))
        store.finish_cell(cell_id, "ok", None, {"throughput": 100.0 + n}, {"lib": f"1.{n}"})
    store.finish_run(run_id, status)
    return run_id


def copies(store: Store, template: dict[str, Any], count: int) -> list[str]:
    """`count` copies of run document `template` stored under new uids; returns the uids."""
    uids = []
    for _ in range(count):
        uid = uuid.uuid4().hex
        import_run(store, {**template, "run": {**template["run"], "uid": uid}})
        uids.append(uid)
    return uids


def template(store: Store) -> dict[str, Any]:
    return run_document(store, finished_run(store))
