"""The fleet's combined table: ratios to each batch's own baseline, and what it says of the hosts."""

from __future__ import annotations

from clientlab.output.fleet import comparable_note, rows
from clientlab.record import Cell

MACHINE = {"cpu_model": "Xeon", "cores": 2, "memory_gib": 23.5, "kernel": "6.1"}


def _cell(driver: str, throughput: float | None, status: str = "ok") -> Cell:
    figures = {"throughput": throughput, "precision": 0.01, "unit": "req/s"} if throughput else None
    return Cell.from_json({"driver": driver, "scenario": "get-small", "status": status, "figures": figures})


def _run(run_id: int, host: str, machine: dict, cells: list[Cell]) -> dict:
    return {"id": run_id, "machine": machine, "cells": cells,
            "config": {"fleet": {"host": host, "batch": run_id, "baseline": "base"}}}


def test_each_cell_is_a_ratio_to_the_baseline_of_its_own_batch():
    runs = [_run(1, "lab1", MACHINE, [_cell("base", 1000), _cell("a", 500)]),
            _run(2, "lab2", MACHINE, [_cell("base", 4000), _cell("b", 2000), _cell("c", None, "failed")])]
    by_driver = {r["driver"] + r["host"]: r for r in rows(runs)}
    assert by_driver["alab1"]["ratio"] == 0.5 and by_driver["blab2"]["ratio"] == 0.5
    assert by_driver["baselab2"]["ratio"] == 1.0 and by_driver["baselab2"]["baseline"]
    assert by_driver["clab2"]["ratio"] is None


def test_hosts_with_different_fingerprints_are_said_not_comparable_in_absolute_figures():
    other = {**MACHINE, "cores": 8}
    same = comparable_note([_run(1, "lab1", MACHINE, []), _run(2, "lab2", MACHINE, [])])
    assert "same fingerprint" in same[-1]
    differ = comparable_note([_run(1, "lab1", MACHINE, []), _run(2, "lab2", other, [])])
    assert "DIFFER" in differ[-1] and "ratio to their own host's baseline only" in differ[-1]
    assert differ[:2] == ["lab1: Xeon, 2 cores, 23.5 GiB, kernel 6.1", "lab2: Xeon, 8 cores, 23.5 GiB, kernel 6.1"]
