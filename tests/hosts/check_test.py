"""`clientlab hosts check` against a real host: a namespace running Debian's sshd, this checkout
as its lab_dir, so that it must come out the same as here."""

from __future__ import annotations

import json

import pytest

from clientlab.hosts import check, remote
from clientlab.measuring import machine
from tests.hosts.nshost import clientlab, trust, write_hosts_file

# namespace hosts hold the network lab's claim: on the worker that runs the network lab's tests
pytestmark = pytest.mark.xdist_group("netlab")

LIKE_FOR_LIKE = ("cpu_model", "cores", "memory_gib", "kernel", "os")   # the same machine underneath


def test_hosts_check_reports_version_builds_clock_quiet_and_fingerprint(ns_host, tmp_path):
    hosts_file = write_hosts_file(tmp_path, ns_host.host())
    trust(ns_host, tmp_path / "known_hosts")
    done = clientlab("hosts", "check", "--hosts", str(hosts_file), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    (row,) = report["hosts"]
    assert row["reached"] and row["error"] is None
    assert row["facts_by"] == "module"
    assert row["version"]["same"], row["version"]
    assert row["version"]["there"]["commit"] == report["here"]["version"]["commit"]
    assert row["builds"]["same"] and row["builds"]["there"] == len(report["here"]["builds"])
    assert 0 < row["rtt_ms"] < 1000
    assert abs(row["clock_offset_ms"]) < 500, "one clock underneath: the offset is about nothing"
    assert len(row["quiet"]["load"]) == 3 and isinstance(row["quiet"]["busy"], list)
    assert row["quiet"]["sample_s"] == 1.0
    here = machine.describe()
    assert {k: row["fingerprint"][k] for k in LIKE_FOR_LIKE} == {k: here[k] for k in LIKE_FOR_LIKE}
    assert row["fingerprint"]["nics"] == {"eth0": {"speed_mbit": 10000, "virtual": True}}   # the veth
    assert 0 < report["seconds"] < 30


def test_hosts_check_table_fits_80_columns_and_says_how_long_it_took(ns_host, tmp_path):
    hosts_file = write_hosts_file(tmp_path, ns_host.host())
    trust(ns_host, tmp_path / "known_hosts")
    done = clientlab("hosts", "check", "--hosts", str(hosts_file), columns=80)
    assert done.returncode == 0, done.stdout + done.stderr
    table = [line for line in done.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 80
    assert "nshost" in table[3] and "yes" in table[3] and "same" in table[3]
    assert f"nshost: {ns_host.host().target()}: {machine.describe()['cpu_model']}" in done.stdout
    assert "checked 1 host(s) in" in done.stdout


def test_facts_come_by_script_where_the_host_has_no_clientlab(ns_host, tmp_path):
    elsewhere = tmp_path / "no-checkout"
    hosts_file = write_hosts_file(tmp_path, ns_host.host(lab_dir=elsewhere))
    trust(ns_host, tmp_path / "known_hosts")
    done = clientlab("hosts", "check", "--hosts", str(hosts_file), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(done.stdout)["hosts"]
    assert row["facts_by"] == "script" and str(elsewhere) in row["note"]
    assert row["version"]["in_short"] == "unknown there" and f"no folder {elsewhere}" in row["version"]["difference"]
    assert row["builds"]["there"] == 0 and row["builds"]["only_here"] == sorted(check.here()["builds"])
    assert row["fingerprint"]["cores"] == machine.describe()["cores"]


def test_the_fingerprint_stored_with_a_run_compares_like_for_like_with_machine_describe(ns_host, tmp_path):
    known_hosts = tmp_path / "known_hosts"
    trust(ns_host, known_hosts)
    fingerprint = remote.fingerprint(ns_host.host(), known_hosts)
    here = machine.describe()
    assert set(here) <= set(fingerprint), "every key a run's `machine` has"
    assert {k: fingerprint[k] for k in LIKE_FOR_LIKE} == {k: here[k] for k in LIKE_FOR_LIKE}


def test_a_host_with_another_checkout_is_said_to_differ():
    ours = check.here()["version"]
    theirs = {**ours, "commit": "0" * 40}
    assert check.version_difference(ours, theirs) == ("other commit",
                                                      f"commit {'0' * 10} there, {ours['commit'][:10]} here")
    clean = {**ours, "dirty": False, "changes": None}
    dirty = {**ours, "dirty": True, "changes": "abc"}
    assert check.version_difference(clean, dirty)[0] == "changes there"
    assert check.version_difference(dirty, clean)[0] == "changes here"
    assert check.version_difference(dirty, {**dirty, "changes": "def"})[0] == "other changes"
    assert check.version_difference(dirty, dict(dirty)) is None


def test_build_differences_name_each_driver_by_how_it_differs():
    ours = {"a": "1", "b": "2", "c": "3"}
    theirs = {"b": "2", "c": "9", "d": "4"}
    assert check.build_differences(ours, theirs) == {"only_here": ["a"], "only_there": ["d"], "different": ["c"]}


def test_a_host_is_quiet_only_without_busy_processes_and_with_a_low_load():
    assert check.quiet_verdict({"load": [0.1, 0, 0], "busy": []}, cores=2) == (True, "load 0.10, no busy process")
    assert check.quiet_verdict({"load": [0.9, 0, 0], "busy": []}, cores=2) == (False, "load 0.90 > 0.50")
    busy = [{"pid": 7, "name": "rustc", "core_share": 0.97}]
    assert check.quiet_verdict({"load": [0.1, 0, 0], "busy": busy}, cores=8) == (False, "busy: rustc (7) 97%")
