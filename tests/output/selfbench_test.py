from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from clientlab.output.selfbench import figures_report, nginx_report

TARGETS = {"server_to_nginx_at_least": 1.0, "server_to_fastest_at_least": 5.0, "server_cpu_share_at_most": 0.2,
           "overhead_below": 0.01}


def _point(connections: int, rate: float) -> dict:
    return {"connections": connections, "clientlab": {"requests_per_s": rate, "min": rate * 0.9, "max": rate * 1.1,
                                                      "mb_per_s": rate / 1000, "cpu_us_per_request": 10.0}}


def _figures() -> dict:
    side = {"path": "/bytes/1024", "seconds": 5, "repeats": 3, "h1": [_point(10, 98765.4)], "h2": [],
            "nginx": None, "nginx_missing": "nginx is not installed", "limits": {"notes": []}, "idle": {}}
    rows = [{"driver": "a", "scenario": "get-small", "status": "ok", "reason": None, "requests_per_s": 20000.0,
             "driver_cpu_us_per_request": 30.0, "server_cpu_us_per_request": 3.0},
            {"driver": "b", "scenario": "get-small", "status": "failed", "reason": "it crashed", "requests_per_s": None},
            {"driver": "c", "scenario": "get-small", "status": "unsupported", "reason": "no", "requests_per_s": None}]
    return {"against_nginx": side, "drivers": rows, "fastest": rows[0], "fastest_parallel": None,
            "server_ceiling": 98765.4, "server_to_fastest": 98765.4 / 20000, "server_to_fastest_parallel": None,
            "cheapest_driver_cpu": rows[0], "server_cpu_share": 0.1,
            "overhead": {"overhead": 0.02, "lab_cpu_fraction": 0.01, "cv": 0.001},
            "noise_floor": {"cv": 0.01, "max_over_min": 1.03, "steal_s": 0.0, "other_cpu_s": 0.0},
            "host_phases": None, "placements": {"driver": "a", "most_repeatable": None,
                                                "placements": {"split": {"status": "failed", "reason": "x"}}},
            "targets": TARGETS}


def _text(table: Table, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(table)
    return console.file.getvalue()


def test_a_figure_stays_whole_in_a_narrow_console():
    table, _ = nginx_report(_figures())
    assert "88,889–108,642" in _text(table, 240).replace("\n", "")
    narrow = _text(table, 120)
    assert "…" not in narrow and "(88,889–108,642" in narrow  # its bracket folded onto the next line, never cut


def test_the_notes_say_why_nginx_is_missing_and_which_cells_did_not_measure():
    _, notes = nginx_report(_figures())
    assert notes[0] == "  nginx: nginx is not installed"
    _, failed = figures_report(_figures())
    assert failed == ["  b get-small: failed it crashed"]


def test_each_figure_is_judged_against_the_target_the_figures_carry():
    text = _text(figures_report(_figures())[0], 240)
    assert "≥ 5× (MISSED)" in text          # 98,765 / 20,000 = 4.9×
    assert "≤ 0.20 (met)" in text
    assert "< 1 % (MISSED)" in text
    assert "fastest parallel driver" not in text
