"""The command line as a user meets it: real processes, a scratch data directory."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import TESTDRIVERS
from tests.support.cli import sigint_as_ctrl_c

CLI = [sys.executable, "-m", "clientlab"]


def clientlab(*args: str, home: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "CLIENTLAB_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=300, **kwargs)


def test_drivers_json_lists_installed_state_and_reason(lab_home):
    proc = clientlab("drivers", "--json", "--driver-path", str(TESTDRIVERS), home=lab_home)
    assert proc.returncode == 0, proc.stderr
    rows = {r["id"]: r for r in json.loads(proc.stdout)}
    assert rows["python-fake-reference"]["installed"] is True
    assert {"id", "language", "library", "capabilities", "installed", "why_not"} <= set(rows["python-fake-reference"])


def test_scenarios_json_lists_parameters(lab_home):
    proc = clientlab("scenarios", "--json", home=lab_home)
    rows = {r["name"]: r for r in json.loads(proc.stdout)["scenarios"]}
    assert rows["get-small"]["params"] == {"count": 2000, "size": 1024}


def test_run_writes_json_cells_and_show_export_read_them(lab_home, tmp_path):
    out = tmp_path / "run.json"
    proc = clientlab("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference,python-fake-crash",
                     "-s", "get-small,parallel-feeds", "-p", "count=20", "--trials", "2", "--warmup", "0", "--retries", "0",
                     "--json", str(out), home=lab_home)
    assert proc.returncode == 1, proc.stderr  # a failed cell: exit 1, and the other cells are still measured
    assert "1 cell(s) failed:" in proc.stderr and "python-fake-crash × get-small" in proc.stderr
    doc = json.loads(out.read_text())
    cells = {(c["driver"], c["scenario"]): c for c in doc["cells"]}
    ok = cells[("python-fake-reference", "get-small")]
    assert ok["status"] == "ok" and ok["figures"]["unit"] == "req/s"
    assert {"throughput", "cpu_user_s", "cpu_sys_s", "peak_rss_kb", "startup_s"} <= set(ok["figures"])
    assert [t["kind"] for t in ok["trials"]] == ["verify", "timed", "timed"]
    assert cells[("python-fake-crash", "get-small")]["status"] == "failed"
    assert cells[("python-fake-reference", "parallel-feeds")]["status"] == "unsupported"
    assert doc["run"]["status"] == "complete" and doc["run"]["machine"]["cores"] >= 1
    assert "FAILED" in proc.stdout and "unsupported" in proc.stdout
    show = clientlab("show", "last", "--cell", "python-fake-reference:get-small", home=lab_home)
    assert show.returncode == 0 and "python-fake-reference × get-small: ok" in show.stdout
    assert "timed 1" in show.stdout and "HTTP/1.1 20" in show.stdout
    exported = clientlab("export", "last", "--format", "csv", home=lab_home)
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert len(rows) == 4 and {r["status"] for r in rows} == {"ok", "failed", "unsupported"}


def test_run_interleaved_over_the_run_and_its_forks_are_stored_and_shown_with_its_title(lab_home, tmp_path):
    out = tmp_path / "run.json"
    proc = clientlab("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference",
                     "-s", "get-small,post-form", "-p", "count=20", "--trials", "2", "--warmup", "0", "--retries", "0",
                     "--interleave", "run", "--forks", "2", "--format", "table", "--json", str(out), home=lab_home)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert (doc["run"]["config"]["interleave"], doc["run"]["config"]["forks"]) == ("run", 2)
    assert {c["status"] for c in doc["cells"]} == {"ok"}
    assert {c["figures"]["processes"] for c in doc["cells"]} == {2}
    title = " ".join(proc.stdout.split())  # the title may wrap
    assert "trials interleaved over the run" in title and "each cell's trials over 2 processes" in title


def test_run_cut_by_its_time_budget_says_so_per_cell_and_stores_the_budget(lab_home, tmp_path):
    out = tmp_path / "run.json"
    proc = clientlab("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference",
                     "-s", "get-small", "-p", "count=20", "--min-trials", "2", "--max-trials", "6",
                     "--precision", "0.0001", "--warmup", "0", "--time-budget", "0.001", "--format", "long",
                     "--json", str(out), home=lab_home)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["run"]["config"]["time_budget_s"] == 0.001
    [cell] = doc["cells"]
    assert [t["kind"] for t in cell["trials"]].count("timed") == 2
    assert "cut by time budget" in " ".join(proc.stdout.split())


def test_interrupted_run_keeps_the_trials_of_the_cell_in_progress(lab_home):
    env = {**os.environ, "CLIENTLAB_HOME": str(lab_home)}
    proc = subprocess.Popen([*CLI, "run", "--driver-path", str(TESTDRIVERS),
                             "-d", "python-fake-reference,python-fake-hang", "-s", "get-small",
                             "-p", "count=20", "--trials", "2", "--warmup", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=sigint_as_ctrl_c)
    db = lab_home / "results.sqlite"
    deadline = time.monotonic() + 120
    hanging = 0
    while time.monotonic() < deadline and not hanging:
        time.sleep(0.2)
        if db.exists():
            with sqlite3.connect(db) as conn:
                # the drivers of a scenario are verified one after the other before their timed trials
                try:
                    hanging = conn.execute("SELECT COUNT(*) FROM cells WHERE driver = 'python-fake-hang'").fetchone()[0]
                except sqlite3.OperationalError:   # the run has not made its tables yet
                    continue
    assert hanging, "the hang driver's cell never started"
    time.sleep(1.0)  # the hang driver is now stuck in its verification
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
        cells = dict(conn.execute("SELECT driver, reason FROM cells").fetchall())
        trials = conn.execute("SELECT t.kind FROM trials t JOIN cells c ON t.cell_id = c.id "
                              "WHERE c.driver = 'python-fake-reference'").fetchall()
    assert cells["python-fake-reference"] == "interrupted"
    assert [k for (k,) in trials] == ["verify"]      # what was measured before Ctrl-C is kept
    assert "python-fake-reference" in stdout


def test_client_option_from_the_command_line_reaches_the_driver(lab_home, tmp_path):
    out = tmp_path / "run.json"
    proc = clientlab("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-s", "get-small",
                     "-p", "count=5", "--trials", "1", "--warmup", "0", "-o", "tcp_nodelay=true",
                     "--json", str(out), home=lab_home)
    assert proc.returncode == 0, proc.stderr
    cell = json.loads(out.read_text())["cells"][0]
    assert cell["scenario"] == "get-small[tcp_nodelay=True]"
    assert cell["status"] == "unsupported" and cell["reason"] == "option tcp_nodelay is not supported"
    assert cell["params"]["client"]["options"] == {"tcp_nodelay": True}


def test_several_http_versions_run_each_scenario_once_per_version_in_one_run(lab_home, tmp_path):
    out = tmp_path / "run.json"
    proc = clientlab("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-s", "get-small",
                     "-p", "count=5", "--trials", "1", "--warmup", "0", "--http", "1.1,2", "--http", "1.1",
                     "--json", str(out), home=lab_home)
    assert proc.returncode == 0, proc.stderr
    cells = {c["scenario"]: c for c in json.loads(out.read_text())["cells"]}
    assert set(cells) == {"get-small[http=1.1]", "get-small[http=2]"}
    assert cells["get-small[http=1.1]"]["status"] == "ok"
    assert cells["get-small[http=2]"]["reason"] == "manifest does not claim http2"


def test_bad_scenario_selection_is_a_clear_error(lab_home):
    proc = clientlab("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-s", "nope",
                     home=lab_home)
    assert proc.returncode == 2
    assert "unknown scenario(s): nope" in proc.stderr


def test_unknown_driver_is_a_clear_error(lab_home):
    proc = clientlab("run", "-d", "python-nope", home=lab_home)
    assert proc.returncode == 2 and "unknown driver(s): python-nope" in proc.stderr


def test_behave_chooses_its_drivers_as_run_does(lab_home):
    # a glob: the drivers it matches, each judged
    proc = clientlab("behave", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-recommends-*", "-s", "short-body",
                     "--settings", "defaults", "--no-store", "--json", "-", home=lab_home)
    assert proc.returncode == 0, proc.stderr
    cells = json.loads(proc.stdout)["cells"]
    assert sorted((c["driver"], c["outcome"]) for c in cells) == [
        ("python-fake-recommends-deadline", "ok"), ("python-fake-recommends-per-read", "ok")]
    # one piece of code chooses for both commands: the same names, the same refusal
    for command in ("run", "behave"):
        proc = clientlab(command, "--driver-path", str(TESTDRIVERS), "-d", "all,zzz-*", home=lab_home)
        assert proc.returncode == 2 and "unknown driver(s): zzz-* (a pattern that matches no driver)" in proc.stderr, \
            (command, proc.stderr)


def test_behave_gives_the_stored_matrixs_time(lab_home):
    args = ["behave", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-s", "short-body",
            "--settings", "defaults"]
    doc = json.loads(clientlab(*args, "--json", "-", home=lab_home).stdout)
    assert doc["run"] and doc["finished_at"] >= doc["started_at"] and doc["wall_s"] >= 0
    printed = clientlab(*args, home=lab_home)
    assert printed.returncode == 0 and printed.stdout.startswith("started "), printed.stdout[:200]
    assert "wall " in printed.stdout.splitlines()[0]


def test_show_without_runs_says_so(lab_home):
    proc = clientlab("show", "last", home=lab_home)
    assert proc.returncode == 2 and "no runs stored yet" in proc.stderr


def test_a_pipe_gets_one_line_per_cell_and_table_on_request(lab_home):
    proc = clientlab("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference,python-fake-no-reuse",
                     "-s", "get-small,post-form", "-p", "count=10", "--trials", "1", "--warmup", "0",
                     home=lab_home)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # the long form: a heading per scenario, then one line per driver with its ratio to the fastest
    assert "get-small" in lines and "post-form" in lines
    cell_lines = [l for l in lines[:lines.index("Versions that ran")] if l.startswith("  python-fake-")]
    assert len(cell_lines) == 4 and all("req/s" in l and "×" in l and "n=10" in l for l in cell_lines)
    table = clientlab("show", "last", "--format", "table", home=lab_home)
    assert "┃" in table.stdout or "│" in table.stdout
    as_json = clientlab("show", "last", "--format", "json", home=lab_home)
    assert len(json.loads(as_json.stdout)["cells"]) == 4


def test_no_color_is_honoured(lab_home):
    # a failed cell is shown in red
    clientlab("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference,python-fake-crash",
              "-s", "get-small", "-p", "count=5", "--trials", "1", "--warmup", "0", home=lab_home)
    env = {**os.environ, "CLIENTLAB_HOME": str(lab_home), "FORCE_COLOR": "1", "NO_COLOR": "1", "COLUMNS": "200"}
    shown = subprocess.run([*CLI, "show", "last", "--format", "table"], capture_output=True, text=True, env=env)
    assert shown.returncode == 0, shown.stderr
    colored = subprocess.run([*CLI, "show", "last", "--format", "table"], capture_output=True, text=True,
                             env={k: v for k, v in env.items() if k != "NO_COLOR"})
    assert not _colour_codes(shown.stdout)       # no colour (bold and italic may stay)
    assert _colour_codes(colored.stdout)         # the check can fail


def _colour_codes(text: str) -> list[str]:
    """SGR parameters that set a foreground or background colour."""
    import re

    params = [p for seq in re.findall(r"\x1b\[([0-9;]*)m", text) for p in seq.split(";") if p]
    return [p for p in params if p.isdigit() and (30 <= int(p) <= 49 or 90 <= int(p) <= 107)]


def test_crosscheck_bare_prints_lab_over_bare_per_cell_and_writes_every_pair(lab_home, tmp_path):
    out = tmp_path / "pairs.json"
    proc = clientlab("crosscheck", "--bare", "--driver-path", str(TESTDRIVERS),
                     "-d", "python-fake-reference,python-fake-no-bare", "-s", "get-small", "-p", "count=30",
                     "--trials", "3", "--placement", "free", "--json", str(out), home=lab_home)
    assert proc.returncode in (0, 1), proc.stderr   # 1: a cell past 10 % (this host's noise decides)
    assert "lab ÷ bare" in proc.stdout and "python-fake-reference" in proc.stdout
    assert "python-fake-no-bare × get-small: no calibration loop" in proc.stdout.replace("\n", " ")
    pairs = {c["driver"]: c for c in json.loads(out.read_text())}
    assert len(pairs["python-fake-reference"]["pairs"]) == 3 and pairs["python-fake-no-bare"]["pairs"] == []


def test_crosscheck_plain_exits_4_when_no_cell_is_off_but_one_is_not_decided(lab_home):
    # three pairs' interval covers the median 75 % of the time, under the 90 % a decision needs,
    # and a plain loop that crashes leaves its cell no ratio: neither is decided, whatever the host
    proc = clientlab("crosscheck", "--plain", "--driver-path", str(TESTDRIVERS),
                     "-d", "python-fake-reference,python-fake-plain-crash", "-s", "get-small", "-p", "count=30",
                     "--trials", "3", "--placement", "free", home=lab_home)
    assert proc.returncode == 4, proc.stderr
    summary = proc.stdout.replace("\n", " ")
    assert "0 of 2 cells within 10% of the library's plain loop" in summary
    assert "2 not decided" in summary and "python-fake-plain-crash × get-small" in summary
    assert "4    --plain: no cell off, but one not decided" in clientlab("crosscheck", "--help", home=lab_home).stdout


def test_a_table_in_a_pipe_keeps_its_columns_readable(lab_home):
    run = clientlab("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-s", "get-small",
                    "-p", "count=10", "--trials", "1", "--warmup", "0", home=lab_home)
    assert run.returncode == 0, run.stderr
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"CLIENTLAB_HOME": str(lab_home)}
    shown = subprocess.run([*CLI, "show", "last", "--cell", "python-fake-reference:get-small"], capture_output=True,
                           text=True, env=env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    header = next(line for line in shown.stdout.splitlines() if "trial" in line and "┃" in line)
    assert "…" not in header, header  # no column cut to a letter or two
