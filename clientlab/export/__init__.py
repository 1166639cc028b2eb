"""Exporters: one module per format, found in this registry by name.

Exporters read only stored results (a run id in the store), never live state, so an export of a
run that is still going or was interrupted shows exactly what has been measured so far.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from clientlab.export import csv_export, json_export
from clientlab.store import Store

Exporter = Callable[[Store, int], str]

EXPORTERS: dict[str, Exporter] = {
    "json": json_export.render,
    "csv": csv_export.render,
}


def export(store: Store, run_id: int, fmt: str) -> str:
    return EXPORTERS[fmt](store, run_id)


def write(store: Store, run_id: int, fmt: str, path: Path) -> None:
    """Write atomically (a reader never sees half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(export(store, run_id, fmt))
    tmp.replace(path)
