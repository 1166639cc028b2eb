"""`clientlab run --on`: the matrix over namespace lab hosts running Debian's sshd, with Debian's
redis-server as the broker; the test drivers and tiny trial budgets keep each batch to seconds."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hosts.nshost import trust, write_hosts_file
from tests.support import TESTDRIVERS

pytestmark = pytest.mark.xdist_group("netlab")

BASELINE = "python-fake-reference"
TINY = ["--driver-path", str(TESTDRIVERS), "--baseline", BASELINE, "-p", "count=20", "--trials", "2",
        "--warmup", "0", "--retries", "0", "--forks", "1"]


def _hosts(ns_hosts, tmp_path: Path, count: int, **fields) -> tuple[list, Path]:
    made = [ns_hosts() for _ in range(count)]
    hosts_file = write_hosts_file(tmp_path, *(h.host(name=f"lab{n}", **fields) for n, h in enumerate(made, start=1)))
    for h in made:
        trust(h, tmp_path / "known_hosts")
    return made, hosts_file


def _fleet(home: Path, hosts_file: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "CLIENTLAB_HOME": str(home), "COLUMNS": "200"}
    return subprocess.Popen([sys.executable, "-m", "clientlab", "run", "--hosts", str(hosts_file), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _runs(home: Path) -> list[dict]:
    with sqlite3.connect(home / "results.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT id, uid, status, config FROM runs ORDER BY id")]


def _cells(home: Path) -> list[tuple]:
    with sqlite3.connect(home / "results.sqlite") as db:
        return db.execute("SELECT r.uid, c.driver, c.scenario, c.status, json_extract(r.config, '$.fleet.host') "
                          "FROM cells c JOIN runs r ON r.id = c.run_id ORDER BY c.id").fetchall()


def test_a_matrix_over_two_lab_hosts_is_stored_once_with_each_cell_tagged_with_its_host(ns_hosts, lab_home, tmp_path):
    _made, hosts_file = _hosts(ns_hosts, tmp_path, 2)
    proc = _fleet(lab_home, hosts_file, "--on", "lab1,lab2", "-d", "python-fake-no-reuse,python-fake-idle-conn",
                  "-s", "get-small,post-form", *TINY)
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 0, stdout + stderr
    runs = _runs(lab_home)
    assert len(runs) == 2 and len({r["uid"] for r in runs}) == 2 and {r["status"] for r in runs} == {"complete"}
    cells = _cells(lab_home)
    # each batch: its driver and the baseline, on both scenarios; every cell once
    assert sorted((d, s) for _u, d, s, _st, _h in cells) == sorted(
        [(d, s) for d in ("python-fake-no-reuse", "python-fake-idle-conn") for s in ("get-small", "post-form")]
        + [(BASELINE, s) for s in ("get-small", "post-form")] * 2)
    assert {st for *_x, st, _h in cells} == {"ok"}
    assert {h for *_x, h in cells} == {"lab1", "lab2"}, "one batch a host by default"
    assert "lab1 (batch" in stdout and "lab2 (batch" in stdout and "(baseline)" in stdout
    assert "same fingerprint" in stdout


def _processes(host, *words: bytes) -> list[int]:
    """The processes in the namespace host whose command line has these words (as arguments)."""
    found = []
    for pid in subprocess.run(["ip", "netns", "pids", host.name], check=False, capture_output=True, text=True).stdout.split():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if all(word in argv for word in words):
            found.append(int(pid))
    return found


def test_a_worker_killed_mid_batch_has_its_batch_run_again_on_the_other_host(ns_hosts, lab_home, tmp_path):
    made, hosts_file = _hosts(ns_hosts, tmp_path, 2)
    proc = _fleet(lab_home, hosts_file, "--on", "lab1,lab2", "-d", "python-fake-no-reuse,python-fake-idle-conn",
                  "--batch-size", "1", "-s", "get-small", *TINY, "--trials", "10")
    lines: list[str] = []
    while not any("→ lab1" in line for line in lines):
        lines.append(proc.stderr.readline())
        assert lines[-1] or proc.poll() is None, "".join(lines)
    # the batch's `clientlab run` under way on lab1 (it lasts seconds): kill lab1's worker under it
    deadline = time.monotonic() + 60
    while not _processes(made[0], b"clientlab", b"run") and time.monotonic() < deadline:
        time.sleep(0.02)
    (worker,) = _processes(made[0], b"clientlab", b"worker")
    assert _processes(made[0], b"clientlab", b"run"), "the batch never started on lab1"
    os.kill(worker, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=240)
    stderr = "".join(lines) + stderr
    assert proc.returncode == 0, stdout + stderr
    assert "lab1: its session ended" in stderr and "(attempt 2)" in stderr
    assert not _processes(made[0], b"clientlab", b"run"), "the killed worker's batch stopped with it"
    runs = _runs(lab_home)
    assert len(runs) == 2 and len({r["uid"] for r in runs}) == 2, runs
    cells = _cells(lab_home)
    assert sorted((d, s) for _u, d, s, _st, _h in cells) == sorted(
        [("python-fake-no-reuse", "get-small"), ("python-fake-idle-conn", "get-small")] + [(BASELINE, "get-small")] * 2)
    assert {h for *_x, h in cells} == {"lab2"}, "lab1 died: lab2 measured both batches"
    assert {st for *_x, st, _h in cells} == {"ok"}


def test_an_unreachable_lab_host_stops_the_fleet_run_with_a_clear_error_at_once(ns_hosts, lab_home, tmp_path):
    silent = ns_hosts(with_address=False, sshd=False)
    hosts_file = write_hosts_file(tmp_path, silent.host(name="gone"))
    trust(silent, tmp_path / "known_hosts")
    started = time.monotonic()
    proc = _fleet(lab_home, hosts_file, "--on", "gone", "-d", "python-fake-no-reuse", "-s", "get-small", *TINY)
    stdout, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - started
    assert proc.returncode == 3, stdout + stderr
    assert "the fleet cannot start: host gone" in stderr and "unreachable within 5 s" in stderr
    assert took < 10 + 5, "ssh's ConnectTimeout is 5 s; the Python start-up the rest"
    assert not (lab_home / "results.sqlite").exists() or _runs(lab_home) == []
