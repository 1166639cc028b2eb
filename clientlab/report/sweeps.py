"""Sweep curves: cells of one driver and base scenario whose settings differ in exactly one
numeric value (a scenario parameter such as size, or a client setting such as
options.max_host_connections). Cells that also differ in something else (e.g. the HTTP version)
make separate curves, named by what tells them apart.

What a curve plots depends on what was swept: a scenario parameter (the work itself) →
throughput and peak RSS; a client setting (how the same work is done) → wall time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from clientlab.record import Cell
from clientlab.report.data import flatten
from clientlab.units import parse_size

SCENARIO_METRICS = ("throughput", "peak_rss")
CLIENT_METRICS = ("wall",)


@dataclass
class Curve:
    name: str
    points: list[tuple[float, Cell]]  # (x, cell), sorted by x


@dataclass
class Sweep:
    scenario: str  # the base scenario name (the label without its [variant])
    key: str       # the swept setting, flattened: "size", "client.options.max_host_connections"
    curves: list[Curve]
    unit: str = ""  # "bytes" when the values were sizes written with a unit ("10MB")

    @property
    def metrics(self) -> tuple[str, ...]:
        return CLIENT_METRICS if "." in self.key else SCENARIO_METRICS

    @property
    def setting(self) -> str:
        return self.key.removeprefix("client.").removeprefix("options.")


def numeric(key: str, value: Any) -> float | None:
    """The value as a number, or None. Scenario parameters (keys without a dot) may be sizes
    written with a unit ("10MB"); client settings count only when they are numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and "." not in key:
        try:
            return float(parse_size(value))
        except ValueError:
            return None
    return None


def base_name(label: str) -> str:
    return label.partition("[")[0]


def _sweeps_of(scenario: str, cells: list[Cell]) -> list[Sweep]:
    flats = [flatten(c.params) for c in cells]
    found = []
    for key in sorted({k for f in flats for k in f}):
        groups: dict[tuple, list[tuple[float, Cell]]] = {}
        for cell, flat in zip(cells, flats):
            x = numeric(key, flat.get(key))
            if x is not None:
                others = tuple(sorted((k, json.dumps(v)) for k, v in flat.items() if k != key))
                groups.setdefault((cell.driver, others), []).append((x, cell))
        groups = {g: pts for g, pts in groups.items() if len({x for x, _ in pts}) >= 2}
        if not groups:
            continue
        # name curves by the driver and whatever other setting tells them apart
        settings = [dict(others) for _, others in groups]
        varying = sorted({k for s in settings for k in s if len({json.dumps(o.get(k)) for o in settings}) > 1})
        curves = []
        for (driver, others), points in groups.items():
            o = dict(others)
            extra = ", ".join(f"{k.removeprefix('client.')}={json.loads(o[k]) if k in o else '-'}" for k in varying)
            curves.append(Curve(f"{driver} ({extra})" if extra else driver,
                                sorted(points, key=lambda p: p[0])))
        sizes = any(isinstance(flat.get(key), str) for flat in flats)
        found.append(Sweep(scenario, key, curves, "bytes" if sizes else ""))
    return found


def find(cells: list[Cell]) -> list[Sweep]:
    """Every sweep in a run's measured cells."""
    by_scenario: dict[str, list[Cell]] = {}
    for c in cells:
        if c.measured:
            by_scenario.setdefault(base_name(c.scenario), []).append(c)
    return [s for name, group in by_scenario.items() for s in _sweeps_of(name, group)]
