"""An experiment expanded into the cells it runs, grouped by network profile."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from clientlab import scenario
from clientlab.drivers import manifest, runtimes
from clientlab.errors import LabInputError
from clientlab.experiment.spec import Experiment, Part, Value
from clientlab.scenario import Scenario


@dataclass(frozen=True)
class PlannedCell:
    part: str
    net: str
    driver: str
    scenario: Scenario
    value: Value | None       # the sweep value, or the variant's index


def _client_changes(part: Part, extra: dict[str, Any]) -> dict[str, Any]:
    changes = {**part.client, **extra}
    options = {**part.client.get("options", {}), **extra.get("options", {})}
    if options:
        changes["options"] = options
    return changes


def _expand(part: Part, files: dict[str, scenario.ScenarioFile], name: str, quick: bool,
            params: dict[str, Any], client: dict[str, Any], label: str, value: Value | None) -> Scenario:
    if name not in files:
        raise LabInputError(f"part '{part.name}': unknown scenario '{name}' (known: {', '.join(files)})")
    f = files[name]
    given = {**part.params, **(part.quick_params if quick else {}), **params}
    known = {k: v for k, v in given.items() if k in f.params}   # a part's params apply where they fit
    sc = f.expand(known).with_client(**client)
    # the part's name first: two parts may run the same settings (a sweep crossing a fixed point)
    marks = [m for text in (part.name, sc.variant, label, "" if part.net == "loopback" else f"net={part.net}")
             for m in text.split(",") if m]
    sc = sc.model_copy(update={"variant": ",".join(dict.fromkeys(marks)),
                               "params": {**sc.params, "part": part.name, "net": part.net,
                                          **({"value": value} if value is not None else {})}})
    return sc


def plan(experiment: Experiment, quick: bool,
         scenarios: list[scenario.ScenarioFile] | None = None) -> list[PlannedCell]:
    """The experiment's cells, from `scenarios` (the scenario files as discover() reads them, by
    default)."""
    files = {f.name: f for f in (scenario.discover()[0] if scenarios is None else scenarios)}
    cells = []
    for part in experiment.parts:
        steps: list[tuple[Value | None, dict, dict, str]] = [(None, {}, {}, "")]
        if part.sweep:
            over = part.sweep.over
            steps = []
            for v in part.sweep.values_for(quick):
                if over.startswith("param:"):
                    key = over.split(":", 1)[1]
                    steps.append((v, {key: v}, {}, f"{key}={v}"))
                elif over.startswith("option:"):
                    key = over.split(":", 1)[1]
                    steps.append((v, {}, {"options": {key: v}}, f"{key}={v}"))
                else:
                    steps.append((v, {}, {over: v}, f"{over}={v}"))
        elif part.variants:
            steps = [(i, {}, v, "")
                     for i, v in enumerate(part.variants)]
        drivers = drivers_of(part, quick)
        names = part.quick_scenarios if quick and part.quick_scenarios is not None else part.scenarios
        for value, params, client, label in steps:
            for name in names:
                sc = _expand(part, files, name, quick, params, _client_changes(part, client), label, value)
                cells.extend(PlannedCell(part.name, part.net, d, sc, value) for d in drivers)
    return cells


def drivers_of(part: Part, quick: bool = False) -> list[str]:
    """The part's driver ids (its quick form's in the quick form), patterns ("go-*") expanded over
    every driver of the lab, and each driver of a runtime the part names once per line
    (`node-fetch@node20`)."""
    entries = part.quick_drivers if quick and part.quick_drivers is not None else part.drivers
    if not part.runtimes and not any(ch in d for d in entries for ch in "*?["):
        return list(entries)
    known = {d.id: d for d in manifest.discover()[0]}
    out: list[str] = []
    for entry in entries:
        matched = sorted(fnmatch.filter(known, entry)) if any(ch in entry for ch in "*?[") else [entry]
        out.extend(m for m in matched if m not in out)
    if part.runtimes:
        chosen = runtimes.parse(part.runtimes)
        out = [v for d in out for v in
               ([x.id for x in manifest.on_runtimes([known[d]], {k: r for k, r in chosen.items()
                                                                  if k in known[d].runtime_kinds})]
                if d in known else [d])]
    return out

