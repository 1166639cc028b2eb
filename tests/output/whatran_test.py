"""A run's table says which versions ran and which drivers depart from their library's defaults."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

from rich.console import Console

from clientlab.output.long import long_lines
from clientlab.output.whatran import print_what_ran
from clientlab.record import Cell
from clientlab.store import Store
from tests.store import legacy


def _cell(driver: str, departures: list[str]) -> Cell:
    return Cell(driver=driver, scenario="get-small", status="unsupported", reason="x",
                versions={"lib": "1.2.3", "runtime": "9"}, departures=tuple(departures))


def _printed(cells: list[Cell]) -> str:
    console = Console(file=io.StringIO(), width=200)
    print_what_ran(console, cells)
    return console.file.getvalue()


def test_each_driver_s_versions_are_listed_once_and_departures_are_marked():
    cells = [_cell("a-one", []), _cell("a-one", []), _cell("b-two", ["keeps two idle connections: why"])]
    text = _printed(cells)
    assert text.count("a-one: lib 1.2.3, runtime 9") == 1
    assert "† Settings of the driver's own" in text and "b-two: keeps two idle connections: why" in text
    lines = [line.plain for line in long_lines(cells)]
    assert any("b-two †" in line for line in lines) and not any("a-one †" in line for line in lines)


def test_no_departure_section_when_no_driver_declares_one():
    assert "Settings of the driver's own" not in _printed([_cell("a-one", [])])


def test_departures_are_stored_with_the_cell_and_old_stores_read_none(tmp_path: Path):
    store = Store(tmp_path / "r.sqlite")
    run_id = store.start_run({}, {})
    store.start_cell(run_id, "b-two", "get-small", {}, "rps", ["why"])
    store.start_cell(run_id, "a-one", "get-small", {}, "rps")
    assert [c["departures"] for c in store.cells(run_id)] == [["why"], []]
    # a store made before the column existed gets it on opening
    with sqlite3.connect(tmp_path / "old.sqlite") as conn:
        conn.executescript(legacy.SCHEMA)
        conn.execute("INSERT INTO runs (started_at, status, machine, config) VALUES (1, 'complete', '{}', '{}')")
        conn.execute("INSERT INTO cells (run_id, driver, scenario, params, status, metric, started_at) "
                     "VALUES (1, 'a-one', 'get-small', '{}', 'ok', 'rps', 1)")
    assert [c["departures"] for c in Store(tmp_path / "old.sqlite").cells(1)] == [[]]


def test_a_driver_that_reported_no_versions_is_left_out_of_the_list():
    silent = Cell(driver="cli-curl", scenario="get-small", status="unsupported", reason="x")
    text = _printed([_cell("a-one", []), silent])
    assert "a-one: lib 1.2.3" in text and "cli-curl" not in text


def test_a_run_over_several_networks_names_them_all_in_its_title():
    from clientlab.cli.common import network_line

    assert network_line({"profiles": ["loopback", "wan-50ms"]}) == "loopback, wan-50ms"
    assert network_line({"profile": "wan-50ms", "summary": "50 ms RTT"}) == "wan-50ms (50 ms RTT)"
    assert network_line(None) == "loopback"
