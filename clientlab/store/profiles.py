"""A cell's CPU profiles in the store (the `profiles` table): folded stacks per profiler."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from clientlab.store.core import Store, decoded
from clientlab.store.schema import cells, profiles


def add_profile(store: Store, cell_id: int, profiler: str, folded: str, samples: int, meta: dict | None) -> None:
    with store.engine.begin() as conn:
        conn.execute(profiles.insert().values(cell_id=cell_id, profiler=profiler, samples=samples, folded=folded,
                                              meta=json.dumps(meta) if meta is not None else None))


def cell_profiles(store: Store, cell_id: int) -> list[dict[str, Any]]:
    """The cell's profiles, one a profiler, in the order they were stored."""
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(profiles).where(profiles.c.cell_id == cell_id).order_by(profiles.c.id)).mappings().all()
    return [decoded("profiles", r) for r in rows]


def run_profiles(store: Store, run_id: int) -> dict[int, list[dict[str, Any]]]:
    """Every profile of a run's cells, by cell id."""
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(profiles).join(cells).where(cells.c.run_id == run_id)
                            .order_by(profiles.c.id)).mappings().all()
    out: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["cell_id"], []).append(decoded("profiles", r))
    return out
