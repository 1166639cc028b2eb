"""Exit codes a CI job can read: 0 when every cell is ok, unsupported or not installed; 1 when
some failed (the summary names them); 2 for bad usage or input; 130 when interrupted (Ctrl-C or
SIGTERM); documented in the help of clientlab, run and experiment."""

from __future__ import annotations

import signal
import sqlite3

import pytest

from tests.support.cli import QUICK, TESTDRIVERS, db_count, lab, wait_for  # noqa: F401 - the fixture


def test_ok_and_unsupported_cells_exit_0(lab):
    proc = lab.run("run", *QUICK, "-s", "get-small,parallel-feeds")  # parallel-feeds: unsupported
    assert proc.returncode == 0, proc.stderr
    assert "cell(s) failed" not in proc.stderr


def test_a_failed_cell_exits_1_and_the_summary_names_it(lab):
    proc = lab.run("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference,python-fake-wrong-body",
                   "-s", "get-small", "-p", "count=5", "--trials", "1", "--warmup", "0")
    assert proc.returncode == 1, proc.stderr
    summary = proc.stderr[proc.stderr.index("1 cell(s) failed:"):]
    assert "python-fake-wrong-body × get-small: verification" in summary
    assert "python-fake-reference" not in summary


@pytest.mark.parametrize("args", [["--trials", "0"], ["--bogus"], ["-s", "nope"], ["-p", "count=abc"],
                                  ["--net", "nope"]])
def test_bad_usage_or_input_exits_2(lab, args):
    proc = lab.run("run", *QUICK, "-s", "get-small", *args) if args[:2] != ["-s", "nope"] else \
        lab.run("run", *QUICK, *args)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr


def _stopped_by_sigterm(lab, proc, started: str) -> sqlite3.Connection:
    """SIGTERM once `started` counts something: the command exits 130 and stores its run as
    interrupted, no cell of it left running; the store, open, for what else the test reads."""
    wait_for(lambda: db_count(lab.db, started))
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    conn = sqlite3.connect(lab.db)
    assert conn.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    assert conn.execute("SELECT COUNT(*) FROM cells WHERE status = 'running'").fetchone()[0] == 0
    return conn


def test_sigterm_exits_130_and_keeps_what_was_measured(lab):
    proc = lab.start("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-hang", "-s", "get-small",
                     "-p", "count=5", "--trials", "1", "--warmup", "0")
    _stopped_by_sigterm(lab, proc, "SELECT COUNT(*) FROM cells").close()


def test_sigterm_stops_behave_as_interrupted_and_keeps_its_finished_cells(lab):
    proc = lab.start("behave", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference",
                     "-s", "short-body,stall-headers,trickle-body", "--settings", "defaults")
    finished = "SELECT COUNT(*) FROM cells WHERE finished_at IS NOT NULL"
    conn = _stopped_by_sigterm(lab, proc, finished)
    with conn:
        assert conn.execute(finished).fetchone()[0] >= 1
    conn.close()


@pytest.mark.parametrize("command", [[], ["run"], ["experiment"]])
def test_help_documents_the_exit_codes(lab, command):
    proc = lab.run(*command, "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for code in ("Exit codes:", "0 done", "1 some cells failed", "2 bad usage or input", "75 --no-wait",
                 "130 interrupted (Ctrl-C or SIGTERM)"):
        assert code in text, (command, code)


def test_an_unknown_experiment_exits_2(lab):
    proc = lab.run("experiment", "nope", "--quick")
    assert proc.returncode == 2 and "unknown experiment(s): 'nope'" in proc.stderr
