"""Connections a driver should not have: kept from one job to the next, or opened and never used.

The bench server flags both in its per-trial counters; a kept connection that carries requests
fails the cell, the others are diagnosis findings. Well-behaved drivers trip none of them.
"""

from __future__ import annotations

from clientlab.analysis.diagnose import diagnose_run
from tests.support.fixtures import shipped


def test_a_driver_that_keeps_its_connections_fails_the_cell(cell):
    # on the same port from trial to trial, the kept connection carries the next job's requests
    result, trials = cell("python-fake-keep-conns", shipped("get-small", count=20), fresh_port=False)
    assert result.status == "failed"
    assert "driver kept connections across jobs" in result.reason
    assert [t["kind"] for t in trials][:2] == ["verify", "timed"] and trials[0]["ok"]


def test_kept_connections_on_fresh_ports_are_a_finding(cell, store):
    # with a new port per trial they carry nothing, but they stay open: a finding, not a failure
    result, trials = cell("python-fake-keep-conns", shipped("get-small", count=20), fresh_port=True)
    assert result.status == "ok", result.reason
    assert trials[-1]["server"]["kept_open"] >= 1
    assert _findings(store) == ["connections-kept-across-jobs"]


def test_an_idle_connection_is_a_finding(cell, store):
    result, trials = cell("python-fake-idle-conn", shipped("get-small", count=20))
    assert result.status == "ok", result.reason
    assert all(t["server"]["idle_connections"] == 1 for t in trials)
    assert _findings(store) == ["idle-connections"]


def test_a_well_behaved_driver_trips_nothing(cell, store):
    for sc in (shipped("get-small", count=20), shipped("get-small", count=10).with_client(keep_alive=False),
               shipped("get-small", count=10).with_client(scheme="https")):
        for fresh_port in (True, False):
            result, trials = cell("python-fake-reference", sc, warmup=1, fresh_port=fresh_port)
            assert result.status == "ok", result.reason
            for t in trials:
                s = t["server"]
                assert s["idle_connections"] == 0 and s["kept_open"] == 0, (sc.label, fresh_port, s)
            assert _findings(store) == []


def _findings(store) -> list[str]:
    """The rules that fired on the last cell stored."""
    run_id = store.resolve("last")
    cells = store.cell_records(run_id)
    found = diagnose_run(cells)
    return [f.rule for f in found[cells[-1].id]]
