"""What the report shows, read from the store only: the run, its cells, findings, versions.

A cell's column is its scenario label; when one driver has several cells with the same label in a
run (a parameter sweep made through the runner), the column also names the parameters that differ,
e.g. `download-memory (size=1MB)`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from clientlab.store import Store


@dataclass
class Report:
    run: dict[str, Any]
    cells: list[dict[str, Any]]                       # store cells, each with its "column"
    columns: list[str]
    drivers: list[str]
    findings: dict[str, list[tuple[str, dict]]] = field(default_factory=dict)  # driver -> (column, finding)
    versions: dict[str, dict[str, str]] = field(default_factory=dict)
    departures: dict[str, list[str]] = field(default_factory=dict)  # driver -> its declared departures
    flames: list = field(default_factory=list)   # profiled cells' flame graphs (clientlab/profile/flame.py)

    @property
    def net(self) -> Any:
        """The network profile the run's config names, if it has one."""
        return self.run["config"].get("net")

    def cell(self, driver: str, column: str) -> dict | None:
        return next((c for c in self.cells if c["driver"] == driver and c["column"] == column), None)


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


def _columns(cells: list[dict]) -> None:
    """Set each cell's column: its label, plus the differing parameters where a label repeats."""
    by_label: dict[str, list[dict]] = {}
    for c in cells:
        by_label.setdefault(c["scenario"], []).append(c)
    for label, group in by_label.items():
        repeats = len(group) > len({c["driver"] for c in group})
        flat = [flatten(c["params"]) for c in group]
        keys = sorted({k for f in flat for k in f})
        differ = [k for k in keys if len({json.dumps(f.get(k)) for f in flat}) > 1] if repeats else []
        for c, f in zip(group, flat):
            c["column"] = f"{label} ({', '.join(f'{k}={f.get(k)}' for k in differ)})" if differ else label


def gather(store: Store, run_id: int) -> Report:
    run = store.run(run_id)
    cells = store.cells(run_id)
    _columns(cells)
    report = Report(run=run, cells=cells, columns=list(dict.fromkeys(c["column"] for c in cells)),
                    drivers=list(dict.fromkeys(c["driver"] for c in cells)))
    for c in cells:
        # every timed trial's wall time: the charts show each trial, not only the median (two modes)
        c["timed_walls"] = [t["wall_s"] for t in store.trials(c["id"]) if t["kind"] == "timed" and t["ok"]
                            and t["wall_s"]]
        for finding in (c["figures"] or {}).get("findings") or []:
            report.findings.setdefault(c["driver"], []).append((c["column"], finding))
        if c["versions"]:
            report.versions.setdefault(c["driver"], {}).update(c["versions"])
        if c["departures"]:
            report.departures[c["driver"]] = c["departures"]
    from clientlab.profile.flame import run_flames

    report.flames = run_flames(store, cells)
    return report
