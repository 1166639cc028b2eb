"""Copying finished runs from one store to another (`clientlab store push`): idempotent by uid,
one transaction a run, so several hosts pushing into one team store at once lose nothing and
pushing twice adds nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sqlalchemy as sa

from clientlab.store.core import Store
from clientlab.store.schema import runs
from clientlab.store.transfer import FINISHED, import_run, run_document, stored_uids


@dataclass
class Pushed:
    """What a push did, run by run (source ids)."""

    added: list[int] = field(default_factory=list)
    already: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)

    def summary(self) -> str:
        return f"{len(self.added)} added, {len(self.already)} already there, {len(self.running)} skipped (running)"


def push(source: Store, target: Store, run_ids: list[int] | None = None,
         progress: Callable[[int, int], None] | None = None) -> Pushed:
    """Copy `run_ids` (default: every run) of `source` into `target`; `progress(done, total)` is
    called after each run."""
    source.mark_killed_runs()  # a run whose process died is finished (killed): it goes too
    wanted = _runs(source, run_ids)
    there = stored_uids(target, [r["uid"] for r in wanted])
    pushed = Pushed()
    for done, row in enumerate(wanted, 1):
        if row["status"] not in FINISHED:
            pushed.running.append(row["id"])
        elif row["uid"] in there:
            pushed.already.append(row["id"])
        else:
            _, added = import_run(target, run_document(source, row["id"]))
            (pushed.added if added else pushed.already).append(row["id"])
        if progress:
            progress(done, len(wanted))
    return pushed


def _runs(source: Store, run_ids: list[int] | None) -> list[dict]:
    query = sa.select(runs.c.id, runs.c.uid, runs.c.status).order_by(runs.c.id)
    if run_ids is not None:
        query = query.where(runs.c.id.in_(run_ids))
    with source.engine.connect() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]
