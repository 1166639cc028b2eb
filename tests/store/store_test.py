"""The Store's behaviours, the same on SQLite and PostgreSQL (fixture `store_url`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from clientlab.errors import LabInputError
from clientlab.record import CellFigures, RunConfig
from clientlab.store import KILLED_CELL, Store, Trial
from clientlab.store import schema
from clientlab.store.core import ended_cell
from clientlab.store.process import pid_alive, process_state
from clientlab.store.schema import runs
from tests.store.testruns import CONFIG, MACHINE, finished_run


def test_a_run_reads_back_as_written_with_its_cells_and_trials(store_url):
    store = Store(store_url)
    run_id = finished_run(store)
    run = store.run(run_id)
    assert (run["status"], run["machine"], run["config"]) == ("complete", MACHINE, CONFIG)
    assert run["finished_at"] >= run["started_at"] and run["pid"] == os.getpid() and len(run["uid"]) == 32
    first, second = store.cells(run_id)
    assert (first["driver"], first["params"], first["figures"], first["versions"]) == (
        "driver-0", {"count": 5}, {"throughput": 100.0}, {"lib": "1.0"})
    assert (first["departures"], second["departures"]) == ([], ["why"])
    trials = store.trials(first["id"])
    assert [t["idx"] for t in trials] == [0, 1, 2] and trials[0]["ok"] is True
    assert (trials[0]["server"], trials[0]["noise"], trials[0]["problems"], trials[0]["wakeups"]) == (
        {"requests": 5}, {"steal": 0.0}, None, 4)


def test_updates_keep_what_was_there(store_url):
    store = Store(store_url)
    run_id = finished_run(store, cells=1)
    store.update_config(run_id, net={"profile": "lan-1g", "measured_rtt_ms": 0.2})
    assert store.run(run_id)["config"] == {**CONFIG, "net": {"profile": "lan-1g", "measured_rtt_ms": 0.2}}
    cell_id = store.cells(run_id)[0]["id"]
    store.set_findings(cell_id, [{"rule": "r"}])
    assert store.cells(run_id)[0]["figures"] == {"throughput": 100.0, "findings": [{"rule": "r"}]}


def test_runs_are_listed_newest_first_and_resolved_by_id_or_last(store_url):
    store = Store(store_url)
    with pytest.raises(LabInputError, match="no runs stored yet"):
        store.resolve("last")
    ids = [finished_run(store, cells=0) for _ in range(3)]
    assert [r["id"] for r in store.runs(2)] == ids[:0:-1] and store.resolve("last") == ids[-1]
    assert store.resolve(str(ids[0])) == ids[0] and store.run_ids() == ids and store.count_runs() == 3
    with pytest.raises(LabInputError, match="no run 999"):
        store.resolve("999")
    with pytest.raises(LabInputError, match="not a run id"):
        store.resolve("first")


def test_a_run_keeps_a_chosen_uid_and_a_second_run_cannot_take_it(store_url):
    store = Store(store_url)
    run_id = store.start_run(MACHINE, CONFIG, uid="job-17")
    assert store.run(run_id)["uid"] == "job-17"
    with pytest.raises(LabInputError, match="uid job-17 is already stored"):
        store.start_run(MACHINE, CONFIG, uid="job-17")
    assert store.run(store.start_run(MACHINE, CONFIG))["uid"] != "job-17"


def test_finished_cells_are_fingerprinted_by_what_they_measured_and_where(store_url):
    store = Store(store_url)
    same = [store.cells(finished_run(store, cells=1))[0]["fingerprint"] for _ in range(2)]
    assert same[0] == same[1] and len(same[0]) == 64
    other_host = store.start_run({**MACHINE, "kernel": "6.12.0"}, CONFIG)
    assert store.run(other_host)["host_fingerprint"] != store.run(1)["host_fingerprint"]
    renamed = store.start_run({**MACHINE, "hostname": "twin"}, CONFIG)  # an identical host
    assert store.run(renamed)["host_fingerprint"] == store.run(1)["host_fingerprint"]
    newer = store.start_run(MACHINE, CONFIG)
    cell_id = store.start_cell(newer, "driver-0", "get-small", {"count": 5}, "requests")
    assert store.cells(newer)[0]["fingerprint"] is None  # not finished yet
    store.finish_cell(cell_id, "ok", None, {}, {"lib": "2.0"})
    assert store.cells(newer)[0]["fingerprint"] not in (None, same[0])


def test_a_running_run_whose_process_is_gone_is_marked_killed_on_opening(store_url):
    store = Store(store_url)
    run_id = store.start_run(MACHINE, CONFIG)
    cell_id = store.start_cell(run_id, "d", "get-small", {}, "requests")
    store.add_trial(cell_id, Trial(kind="verify", idx=0, ok=True))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True,
                          text=True)
    with store.engine.begin() as conn:
        conn.execute(runs.update().where(runs.c.id == run_id).values(pid=int(dead.stdout)))
    again = Store(store_url)
    assert again.run(run_id)["status"] == "killed"
    cell = again.cells(run_id)[0]
    assert (cell["status"], cell["reason"], len(again.trials(cell_id))) == ("failed", KILLED_CELL, 1)


def test_a_run_that_ends_leaves_no_cell_running(store_url):
    # a stop between a cell's start and its finish (Ctrl-C, SIGTERM, a lab error)
    store = Store(store_url)
    run_id = store.start_run(MACHINE, CONFIG)
    done = store.start_cell(run_id, "d", "get-small", {}, "requests")
    store.finish_cell(done, "ok", None, {"throughput": 5.0}, {"lib": "1"})
    busy = store.start_cell(run_id, "d", "post-form", {}, "requests")
    store.add_trial(busy, Trial(kind="verify", idx=0, ok=True))
    store.finish_run(run_id, "interrupted")
    first, second = store.cells(run_id)
    assert (first["status"], first["figures"]) == ("ok", {"throughput": 5.0})
    assert (second["status"], second["reason"]) == ("failed", ended_cell("interrupted"))
    assert second["finished_at"] is not None and len(store.trials(busy)) == 1


def test_a_cell_left_running_in_an_ended_run_is_failed_when_the_store_opens(store_url):
    # as a store written before finish_run closed them holds it
    store = Store(store_url)
    run_id = store.start_run(MACHINE, CONFIG)
    busy = store.start_cell(run_id, "d", "get-small", {}, "requests")
    store.add_trial(busy, Trial(kind="timed", idx=0, ok=True, wall_s=1.0))
    with store.engine.begin() as conn:
        conn.execute(runs.update().where(runs.c.id == run_id).values(status="failed", finished_at=123.0))
    again = Store(store_url)
    cell = again.cells(run_id)[0]
    assert (cell["status"], cell["reason"], cell["finished_at"]) == ("failed", ended_cell("failed"), 123.0)
    assert again.run(run_id)["status"] == "failed" and len(again.trials(busy)) == 1


def test_a_zombie_lab_is_a_gone_process():
    # a lab that exited but was not reaped answers signal 0 as a live one does
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while process_state(proc.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_state(proc.pid) == "Z"
        assert not pid_alive(proc.pid)
    finally:
        proc.wait()
    assert pid_alive(os.getpid())


def test_the_store_says_where_it_is_without_a_password(store_url):
    store = Store(store_url)
    assert "clientlab-test" not in store.where and store.revision() == schema.HEAD
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(runs)).scalar() == 0


def test_the_network_in_a_cells_fingerprint_is_its_profile_however_the_run_names_it():
    from clientlab.store.fingerprint import network_of

    assert network_of({"net": "loopback"}) == network_of({"net": {"profile": "loopback", "asked": "x"}})
    measured = {"net": {"profile": "lan-1g", "settings": {"rate": "1gbit"}, "measured_rtt_ms": 0.31}}
    assert network_of(measured) == network_of({**measured, "net": {**measured["net"], "measured_rtt_ms": 0.5}})
    assert network_of({}) == {"profile": None, "settings": None}


def test_another_process_reading_a_new_sqlite_store_sees_every_later_write(tmp_path):
    # a new store is made (and migrated) by the process that writes it; readers come and go
    store = Store(tmp_path / "r.sqlite")
    code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "print(c.execute('SELECT COUNT(*) FROM runs').fetchone()[0]); c.close()")
    read = [sys.executable, "-c", code, str(tmp_path / "r.sqlite")]
    seen = []
    for _ in range(3):
        store.start_run(MACHINE, CONFIG)
        seen.append(int(subprocess.run(read, check=True, capture_output=True, text=True).stdout))
    assert seen == [1, 2, 3]


def test_typed_figures_are_stored_as_their_json_and_read_back_typed(store_url):
    store = Store(store_url)
    run_id = finished_run(store, cells=1)
    cell_id = store.start_cell(run_id, "driver-9", "get-small", {"count": 5}, "requests")
    figures = CellFigures(throughput=50.0, unit="req/s", requests=5, notes=("n",))
    store.finish_cell(cell_id, "ok", None, figures, {"lib": "9"})
    stored = store.cells(run_id)[-1]
    assert stored["figures"] == figures.to_json() and stored["figures"]["notes"] == ["n"]
    record = store.cell_records(run_id)[-1]
    assert (record.id, record.run_id, record.figures, record.versions) == (cell_id, run_id, figures, {"lib": "9"})
    assert store.run_config(run_id) == RunConfig.from_json(CONFIG) and store.run_config(run_id).net_profile == "loopback"
