"""One measuring run per machine: a second run waits for the first, saying which run holds the
lab (pid, command, since when), or exits 75 with --no-wait; commands that only read take no
lock; a killed holder leaves the lab free."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from clientlab import paths
from clientlab.measuring import runlock
from clientlab.measuring.runlock import LabBusy, RunLock
from tests.support.cli import CLI, QUICK, TESTDRIVERS, db_count, lab, lines_while_waiting, wait_for  # noqa: F401 - the fixture

# holds the machine's run lock: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


def test_the_lock_is_per_machine_not_per_data_directory(monkeypatch):
    monkeypatch.delenv(runlock.LOCK_ENV, raising=False)
    monkeypatch.setenv("CLIENTLAB_HOME", "/somewhere/else")
    path = runlock.lock_path()
    assert path.parent in runlock.SYSTEM_DIRS and path.name == "clientlab.lock"


def test_a_held_lock_refuses_a_second_holder_naming_the_first(tmp_path):
    path = tmp_path / "lab.lock"
    with RunLock("clientlab run -d first", path):
        with pytest.raises(LabBusy, match=rf"pid {os.getpid()} \(clientlab run -d first\) since \d{{4}}-"):
            RunLock("second", path).acquire(wait=False)
    RunLock("third", path).acquire(wait=False)  # released: free again


def test_a_waiting_holder_is_told_who_holds_the_lab_and_gets_it_after(tmp_path):
    path = tmp_path / "lab.lock"
    first = RunLock("clientlab experiment all", path)
    first.acquire()
    said: list[str] = []
    got = threading.Event()

    def second() -> None:
        RunLock("second", path).acquire(wait=True, on_wait=said.append, poll_s=0.05)
        got.set()

    threading.Thread(target=second, daemon=True).start()
    wait_for(lambda: said, timeout=10)
    assert not got.is_set() and "waiting for the lab" in said[0] and "clientlab experiment all" in said[0]
    first.release()
    assert got.wait(10)


def test_a_killed_holder_leaves_the_lab_free(tmp_path):
    path = tmp_path / "lab.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from clientlab.measuring.runlock import RunLock; "
                               f"RunLock('holder', __import__('pathlib').Path({str(path)!r})).acquire(wait=False); "
                               "print('held', flush=True); time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LabBusy, match="holder"):
            RunLock("me", path).acquire(wait=False)
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        RunLock("me", path).acquire(wait=False)
    finally:
        holder.kill()
        holder.wait()


def test_run_with_no_wait_exits_75_naming_the_run_that_holds_the_lab(lab):
    with RunLock("clientlab run -d c-libcurl", lab.lock):
        for command in (["run", *QUICK, "-s", "get-small"], ["experiment", "perl-clients", "--quick"],
                        ["behave", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-s", "short-body"]):
            proc = lab.run(*command, "--no-wait")
            assert proc.returncode == 75, proc.stderr
            text = " ".join(proc.stderr.split())
            assert f"another measuring run holds the lab: pid {os.getpid()} (clientlab run -d c-libcurl)" in text
    assert db_count(lab.db, "SELECT COUNT(*) FROM runs") == 0


def test_a_second_run_waits_for_the_first_then_runs(lab):
    first = RunLock("clientlab run (the first)", lab.lock)
    first.acquire()
    proc = lab.start("run", *QUICK, "-s", "get-small")
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
    try:
        wait_for(lambda: any("waiting for the lab" in line for line in lines), timeout=60)
        assert "clientlab run (the first)" in "".join(lines) and proc.poll() is None
        assert not lab.db.exists()  # it has not started measuring
    finally:
        first.release()
    assert proc.wait(120) == 0, "".join(lines)


def test_the_waiting_message_wraps_at_80_columns(lab):
    first = RunLock("clientlab run -d c-libcurl,go-net-http,python-requests -s get-small,get-json-335k", lab.lock)
    first.acquire()
    proc = subprocess.Popen([*CLI, "run", *QUICK, "-s", "get-small"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**lab.env, "COLUMNS": "80"}, cwd=paths.ROOT)
    try:
        said = lines_while_waiting(proc)
    finally:
        first.release()
    assert " ".join(" ".join(said).split()).startswith("waiting for the lab: another measuring run holds it, pid")
    assert len(said) > 1 and max(map(len, said)) <= 80, said


def test_the_busy_message_of_no_wait_wraps_at_80_columns(lab):
    with RunLock("clientlab run -d c-libcurl,go-net-http,python-requests -s get-small,get-json-335k", lab.lock):
        proc = subprocess.run([*CLI, "run", *QUICK, "-s", "get-small", "--no-wait"], capture_output=True, text=True,
                              env={**lab.env, "COLUMNS": "80"}, cwd=paths.ROOT, timeout=120)
    said = proc.stderr.splitlines()
    assert proc.returncode == 75, proc.stderr
    assert " ".join(" ".join(said).split()).startswith("busy: another measuring run holds the lab: pid")
    assert len(said) > 1 and max(map(len, said)) <= 80, said


def test_commands_that_only_read_do_not_take_the_lock(lab):
    assert lab.run("run", *QUICK, "-s", "get-small").returncode == 0
    with RunLock("clientlab run (busy)", lab.lock):
        for command in (["show", "last"], ["runs"], ["scenarios"], ["drivers"], ["export", "last"],
                        ["diagnose", "last"], ["net", "list"], ["experiment", "--list"]):
            proc = lab.run(*command, timeout=60)
            assert proc.returncode == 0 and "waiting" not in proc.stderr, (command, proc.stderr)


def test_two_real_runs_never_measure_at_once(lab):
    first = lab.start("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-hang", "-s", "get-small",
                      "-p", "count=5", "--trials", "1", "--warmup", "0")
    try:
        wait_for(lambda: db_count(lab.db, "SELECT COUNT(*) FROM runs"))
        second = lab.run("run", *QUICK, "-s", "get-small", "--no-wait")
        assert second.returncode == 75
        assert f"pid {first.pid} (clientlab run --driver-path" in " ".join(second.stderr.split())
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
