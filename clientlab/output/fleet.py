"""A fleet run's combined table: every cell with the host that measured it, its figure and
spread, and its ratio to the baseline measured in the same batch (same host, same minutes). Cells
are ranked by that ratio; absolute figures are set side by side only where the hosts' fingerprints
agree, and the table says so when they do not."""

from __future__ import annotations

from rich.table import Table

from clientlab.output.cellfigures import precision, throughput
from clientlab.record import FleetBatch, RunConfig

LIKE_FOR_LIKE = ("cpu_model", "cores", "memory_gib", "kernel")   # what must agree for absolute figures


def host_fingerprint(machine: dict) -> tuple:
    return tuple(machine.get(k) for k in LIKE_FOR_LIKE)


def describe_machine(machine: dict) -> str:
    return (f"{machine.get('cpu_model', '?')}, {machine.get('cores', '?')} cores, "
            f"{machine.get('memory_gib', '?')} GiB, kernel {machine.get('kernel', '?')}")


def _fleet(run: dict) -> FleetBatch:
    return RunConfig.from_json(run["config"]).fleet or FleetBatch()


def rows(runs: list[dict]) -> list[dict]:
    """One row a cell: {driver, scenario, host, cell, ratio}; `runs` are batch runs with their cells
    (run['cells'], typed). The ratio is the cell's throughput over its batch's baseline on that scenario."""
    out = []
    for run in runs:
        fleet = _fleet(run)
        base = {c.scenario: c for c in run["cells"] if c.driver == fleet.baseline and c.status == "ok"}
        for cell in run["cells"]:
            ref = base.get(cell.scenario)
            ratio = None
            if cell.measured and ref and ref.figures:
                ratio = cell.figures.throughput / ref.figures.throughput
            out.append({"driver": cell.driver, "scenario": cell.scenario, "host": fleet.host or "—",
                        "batch": fleet.batch, "run_id": run["id"], "cell": cell, "ratio": ratio,
                        "baseline": cell.driver == fleet.baseline})
    return out


def comparable_note(runs: list[dict]) -> list[str]:
    """What the hosts were, and whether their absolute figures may stand side by side."""
    machines: dict[str, dict] = {}
    for run in runs:
        host = _fleet(run).host
        if host:
            machines.setdefault(host, run["machine"])
    kinds = {host_fingerprint(m) for m in machines.values()}
    lines = [f"{host}: {describe_machine(m)}" for host, m in sorted(machines.items())]
    if len(kinds) > 1:
        lines.append("these hosts' fingerprints DIFFER: absolute figures are not comparable across them; "
                     "cells are ranked by their ratio to their own host's baseline only")
    elif machines:
        lines.append("every host has the same fingerprint; cells are ranked by their ratio to their own batch's "
                     "baseline")
    return lines


def _sort_key(row: dict) -> tuple:
    return (row["scenario"], row["ratio"] is None, -(row["ratio"] or 0), row["driver"])


def fleet_table(runs: list[dict], title: str) -> Table:
    table = Table(title=title)
    for column, justify in (("scenario", "left"), ("driver", "left"), ("host", "left"), ("× baseline", "right"),
                            ("figure", "right"), ("±", "right"), ("run", "right")):
        table.add_column(column, justify=justify)
    for row in sorted(rows(runs), key=_sort_key):
        cell = row["cell"]
        if cell.measured:
            figure, spread = throughput(cell.figures), precision(cell.figures)
        else:
            figure, spread = cell.status.upper() if cell.status == "failed" else cell.status, ""
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}" + (" (baseline)" if row["baseline"] else "")
        table.add_row(row["scenario"], row["driver"], f"{row['host']} (batch {row['batch']})", ratio, figure, spread,
                      str(row["run_id"]))
    return table
