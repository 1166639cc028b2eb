"""One run as a JSON document, and back: how runs travel between stores (`clientlab store push`,
a distributed matrix's workers).

A document holds the run row (its `uid`, machine, config, status, times, the process that ran it,
fingerprints), its cells and each cell's trials and CPU profiles (folded stacks), all as stored; ids are the source store's and are
not kept on import. Importing is idempotent on `uid` and one transaction: a run is there whole or
not at all, and several processes importing the same run store it once.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from clientlab.errors import LabInputError
from clientlab.store.core import Store, decoded
from clientlab.store.process import run_process_gone
from clientlab.store.schema import JSON_COLUMNS, cells, profiles, runs, trials

FORMAT = "clientlab-run/1"
FINISHED = ("complete", "interrupted", "failed", "killed", "done")   # "done": a behave run stored before it ended "complete"


def run_document(store: Store, run_id: int) -> dict[str, Any]:
    """Run `run_id` of `store` as a JSON-serialisable document (the format `import_run` takes)."""
    with store.engine.connect() as conn:
        row = conn.execute(sa.select(runs).where(runs.c.id == run_id)).mappings().first()
        if row is None:
            raise LabInputError(f"no run {run_id} in {store.where}")
        if row["status"] == "running" and run_process_gone(row):
            store.mark_killed_runs()  # gone since the store was opened: say so in the document too
            row = conn.execute(sa.select(runs).where(runs.c.id == run_id)).mappings().first()
        cell_rows = conn.execute(sa.select(cells).where(cells.c.run_id == run_id).order_by(cells.c.id)).mappings().all()
        trial_rows = conn.execute(sa.select(trials).join(cells).where(cells.c.run_id == run_id)
                                  .order_by(trials.c.id)).mappings().all()
        profile_rows = conn.execute(sa.select(profiles).join(cells).where(cells.c.run_id == run_id)
                                    .order_by(profiles.c.id)).mappings().all()
    by_cell: dict[int, list[dict[str, Any]]] = {}
    for trial in trial_rows:
        by_cell.setdefault(trial["cell_id"], []).append(decoded("trials", trial))
    profiled: dict[int, list[dict[str, Any]]] = {}
    for profile in profile_rows:
        profiled.setdefault(profile["cell_id"], []).append(decoded("profiles", profile))
    return {"format": FORMAT, "run": decoded("runs", row),
            "cells": [{**decoded("cells", c), "trials": by_cell.get(c["id"], []),
                       **({"profiles": profiled[c["id"]]} if c["id"] in profiled else {})} for c in cell_rows]}


def import_run(store: Store, doc: dict[str, Any]) -> tuple[int, bool]:
    """Store `doc` as a run of `store`, with the same uid, times and contents, in one transaction.
    Returns (its id, True), or (the id it already has there, False) when that uid is stored."""
    run = _checked(doc)
    existing = run_id_of(store, run["uid"])
    if existing is not None:
        return existing, False
    try:
        with store.engine.begin() as conn:
            run_id = conn.execute(runs.insert().values(_row("runs", run, runs))).inserted_primary_key[0]
            if doc["cells"]:  # a statement a table, not a round trip a row: a team store may be far away
                cell_ids = conn.execute(cells.insert().returning(cells.c.id, sort_by_parameter_order=True),
                                        [{**_row("cells", c, cells), "run_id": run_id} for c in doc["cells"]]).scalars()
                ids = cell_ids.all()
                rows = [{**_row("trials", t, trials), "cell_id": cell_id}
                        for cell, cell_id in zip(doc["cells"], ids, strict=True) for t in cell.get("trials", [])]
                if rows:
                    conn.execute(trials.insert(), rows)
                kept = [{**_row("profiles", p, profiles), "cell_id": cell_id}
                        for cell, cell_id in zip(doc["cells"], ids, strict=True) for p in cell.get("profiles", [])]
                if kept:
                    conn.execute(profiles.insert(), kept)
    except sa.exc.IntegrityError:
        existing = run_id_of(store, run["uid"])  # another process stored it meanwhile
        if existing is None:
            raise
        return existing, False
    return int(run_id), True


def run_id_of(store: Store, uid: str) -> int | None:
    with store.engine.connect() as conn:
        return conn.execute(sa.select(runs.c.id).where(runs.c.uid == uid)).scalar()


def stored_uids(store: Store, uids: list[str]) -> set[str]:
    """Which of `uids` `store` has (asked in batches: a long list is fine)."""
    found: set[str] = set()
    with store.engine.connect() as conn:
        for start in range(0, len(uids), 500):
            batch = uids[start:start + 500]
            found.update(conn.execute(sa.select(runs.c.uid).where(runs.c.uid.in_(batch))).scalars())
    return found


def _checked(doc: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise LabInputError(f"not a run document (format {FORMAT!r} expected, got "
                            f"{doc.get('format') if isinstance(doc, dict) else type(doc).__name__!r})")
    run = doc["run"]
    if not run.get("uid"):
        raise LabInputError("the run document has no uid: it cannot be imported idempotently")
    if run.get("status") not in FINISHED:
        raise LabInputError(f"run {run.get('id')} (uid {run['uid']}) is {run.get('status')}: only a finished "
                            f"run ({', '.join(FINISHED)}) can be copied to another store")
    return run


def _row(table: str, values: dict[str, Any], columns: sa.Table) -> dict[str, Any]:
    """The columns of `table` in `values` (ids left out), JSON columns encoded again."""
    row = {}
    for column in columns.columns:
        if column.name == "id" or column.name not in values:
            continue
        value = values[column.name]
        if column.name in JSON_COLUMNS[table] and value is not None:
            value = json.dumps(value)
        if column.name == "ok":
            value = int(value)
        row[column.name] = value
    return row
