"""What the report shows, read from the store only: the run, its cells, findings, versions.

A cell's column is its scenario label; when one driver has several cells with the same label in a
run (a parameter sweep made through the runner), the column also names the parameters that differ,
e.g. `download-memory (size=1MB)`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from clientlab.record import Cell, Finding, RunConfig
from clientlab.store import Store


@dataclass
class Report:
    run: dict[str, Any]
    cells: list[Cell]                                 # the run's cells, each with its column
    columns: list[str]
    drivers: list[str]
    findings: dict[str, list[tuple[str, Finding]]] = field(default_factory=dict)  # driver -> (column, finding)
    versions: dict[str, dict[str, str]] = field(default_factory=dict)
    departures: dict[str, list[str]] = field(default_factory=dict)  # driver -> its declared departures
    flames: list = field(default_factory=list)   # profiled cells' flame graphs (clientlab/profile/flame.py)
    # every timed trial's wall time, by cell id: the charts show each trial, not only the median (two modes)
    timed_walls: dict[int, list[float]] = field(default_factory=dict)

    @property
    def net(self) -> Any:
        """The network profile the run's config names, if it has one."""
        return RunConfig.from_json(self.run["config"]).net

    def cell(self, driver: str, column: str) -> Cell | None:
        return next((c for c in self.cells if c.driver == driver and c.column == column), None)


def flatten(params: dict[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    """{"size": "1MB", "client": {"options": {"x": 6}}} -> {"size": "1MB", "client.options.x": 6};
    lists become comma-joined text."""
    out: dict[str, Any] = {}
    for key, value in (params or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        elif isinstance(value, list):
            out[name] = ",".join(str(v) for v in value)
        else:
            out[name] = value
    return out


def _columns(cells: list[Cell]) -> list[Cell]:
    """Each cell with its column: its label, plus the differing parameters where a label repeats."""
    by_label: dict[str, list[int]] = {}
    for i, c in enumerate(cells):
        by_label.setdefault(c.scenario, []).append(i)
    out = list(cells)
    for label, group in by_label.items():
        repeats = len(group) > len({cells[i].driver for i in group})
        flat = [flatten(cells[i].params) for i in group]
        keys = sorted({k for f in flat for k in f})
        differ = [k for k in keys if len({json.dumps(f.get(k)) for f in flat}) > 1] if repeats else []
        for i, f in zip(group, flat):
            out[i] = cells[i].with_(column=f"{label} ({', '.join(f'{k}={f.get(k)}' for k in differ)})"
                                    if differ else label)
    return out


def gather(store: Store, run_id: int) -> Report:
    run = store.run(run_id)
    rows = store.cells(run_id)
    cells = _columns([Cell.from_json(row) for row in rows])
    report = Report(run=run, cells=cells, columns=list(dict.fromkeys(c.column for c in cells)),
                    drivers=list(dict.fromkeys(c.driver for c in cells)))
    for c in cells:
        report.timed_walls[c.id] = [t["wall_s"] for t in store.trials(c.id) if t["kind"] == "timed" and t["ok"]
                                    and t["wall_s"]]
        for finding in c.figures.findings if c.figures is not None else ():
            report.findings.setdefault(c.driver, []).append((c.column, finding))
        if c.versions:
            report.versions.setdefault(c.driver, {}).update(c.versions)
        if c.departures:
            report.departures[c.driver] = list(c.departures)
    from clientlab.profile.flame import run_flames

    report.flames = run_flames(store, rows)
    return report
