"""A run killed with SIGKILL leaves an intact store (WAL, every trial committed as it is written):
the next command that opens the store marks the run killed, keeps its finished cells, fails the
cell it was in (its trials kept), and `runs` / `show` list it as killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from clientlab.store import KILLED_CELL, Store, Trial
from clientlab.store.process import boot_id, process_start
from clientlab.store.schema import runs
from tests.store import legacy
from tests.support.cli import TESTDRIVERS, descendants, lab, wait_for  # noqa: F401 - the fixture

# kills a run at a moment it waits for: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _running_run(path, **process) -> int:
    """A run left `running`, with one finished cell and one in progress, as a killed lab leaves it."""
    s = Store(path)
    run_id = s.start_run({}, {"drivers": ["d"], "scenarios": ["a", "b"]})
    done = s.start_cell(run_id, "d", "a", {}, "requests")
    s.add_trial(done, Trial(kind="timed", idx=0, ok=True, wall_s=1.0))
    s.finish_cell(done, "ok", None, {"throughput": 5.0}, {"x": "1"})
    busy = s.start_cell(run_id, "d", "b", {}, "requests")
    s.add_trial(busy, Trial(kind="verify", idx=0, ok=True, wall_s=1.0))
    if process:
        with s.engine.begin() as conn:
            conn.execute(runs.update().where(runs.c.id == run_id).values(**process))
    s.close()
    return run_id


def test_a_run_whose_process_is_gone_is_marked_killed_keeping_its_cells(tmp_path):
    run_id = _running_run(tmp_path / "r.sqlite", pid=_dead_pid())
    s = Store(tmp_path / "r.sqlite")
    assert s.run(run_id)["status"] == "killed"
    a, b = s.cells(run_id)
    assert (a["status"], a["figures"]["throughput"]) == ("ok", 5.0) and len(s.trials(a["id"])) == 1
    assert (b["status"], b["reason"]) == ("failed", KILLED_CELL) and len(s.trials(b["id"])) == 1


def test_a_run_of_a_previous_boot_or_a_reused_pid_is_killed(tmp_path):
    other_boot = _running_run(tmp_path / "r.sqlite", boot_id="another-boot")
    reused = _running_run(tmp_path / "r.sqlite", pid_start=1)  # this pid, started at another time
    s = Store(tmp_path / "r.sqlite")
    assert s.run(other_boot)["status"] == "killed" and s.run(reused)["status"] == "killed"


def test_a_live_run_and_a_run_of_another_host_are_left_running(tmp_path):
    alive = _running_run(tmp_path / "r.sqlite")  # this very process
    elsewhere = _running_run(tmp_path / "r.sqlite", pid=_dead_pid(), host=socket.gethostname() + "-other")
    s = Store(tmp_path / "r.sqlite")
    assert s.run(alive)["status"] == "running" and s.run(elsewhere)["status"] == "running"
    with s.engine.connect() as conn:
        row = conn.execute(sa.select(runs).where(runs.c.id == alive)).mappings().one()
    assert row["pid"] == os.getpid() and row["boot_id"] == boot_id()
    assert row["pid_start"] == process_start(os.getpid()) and row["host"] == socket.gethostname()


def test_a_store_made_before_the_process_columns_opens_and_marks_its_killed_runs(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(legacy.SCHEMA)  # runs without boot_id, pid_start, host
        conn.execute("INSERT INTO runs (started_at, status, pid, machine, config) VALUES (1, 'running', ?, '{}', '{}')",
                     (_dead_pid(),))
    assert Store(path).runs()[0]["status"] == "killed"


def test_a_run_killed_with_sigkill_mid_run_leaves_an_intact_store(lab):
    # one scenario after the other: the first cell is done while the second still has most of its
    # trials to go (interleaved over the run, both would end within a trial of each other)
    proc = lab.start("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference",
                     "-s", "get-small,post-form", "-p", "count=1000", "--trials", "10", "--warmup", "0",
                     "--retries", "0", "--interleave", "scenario")
    started: list[int] = []
    try:
        def mid_run() -> bool:
            if not lab.db.exists():
                return False
            try:
                with sqlite3.connect(lab.db) as conn:
                    cells = conn.execute("SELECT status, (SELECT COUNT(*) FROM trials t WHERE t.cell_id = c.id) "
                                         "FROM cells c ORDER BY id").fetchall()
            except sqlite3.OperationalError:  # the schema is not written yet
                return False
            return len(cells) == 2 and cells[0][0] == "ok" and cells[1][0] == "running" and cells[1][1] >= 2

        wait_for(mid_run, timeout=240, every=0.05)
        started = descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        with sqlite3.connect(lab.db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("SELECT status FROM runs").fetchone()[0] == "running"  # nobody told it yet
            kept = conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        listed = lab.run("runs")  # the next command that opens the store
        assert listed.returncode == 0 and "killed" in listed.stdout, listed.stderr
        shown = lab.run("show", "last", "--format", "json")
        doc = json.loads(shown.stdout)
        assert doc["run"]["status"] == "killed"
        first, second = doc["cells"]
        assert first["status"] == "ok" and first["figures"]["throughput"] > 0
        assert second["status"] == "failed" and second["reason"] == KILLED_CELL
        assert sum(len(c["trials"]) for c in doc["cells"]) == kept  # every committed trial is there
        with sqlite3.connect(lab.db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        again = lab.run("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-s", "get-small",
                        "-p", "count=5", "--trials", "1", "--warmup", "0", "--no-wait")
        assert again.returncode == 0, again.stderr  # the lock died with the run
    finally:
        proc.kill()
        for pid in started:  # the bench server and driver it had started, if they outlived it
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
