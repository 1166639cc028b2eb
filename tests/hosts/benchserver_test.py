"""The bench server on a host of its own: a namespace host running Debian's sshd, the server
shipped there and reached through an SSH forward, the drivers here."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clientlab.hosts.benchserver import ServerHost
from tests.hosts.nshost import trust, write_hosts_file
from tests.support import TESTDRIVERS

pytestmark = pytest.mark.xdist_group("netlab")   # namespace hosts hold the network lab's claim

QUICK = ("--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-p", "count=20", "--trials", "2",
         "--warmup", "0", "--retries", "0", "--trial-seconds", "0")


def clientlab(*args: str, home: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clientlab", *args], capture_output=True, text=True, timeout=180,
                          env=_env(home), check=False, **kwargs)


def _env(home: Path) -> dict[str, str]:
    import os
    return {**os.environ, "CLIENTLAB_HOME": str(home), "COLUMNS": "200"}


@pytest.fixture
def server_host(ns_host, tmp_path):
    """(the namespace host, its hosts file) with the host's key trusted."""
    hosts_file = write_hosts_file(tmp_path, ns_host.host())
    trust(ns_host, tmp_path / "known_hosts")
    return ns_host, hosts_file


def _cells(home: Path) -> dict[tuple[str, str], tuple[str, str | None]]:
    with sqlite3.connect(home / "results.sqlite") as db:
        return {(d, s): (st, r) for d, s, st, r in db.execute("SELECT driver, scenario, status, reason FROM cells")}


def test_a_run_with_the_server_on_another_host_verifies_counts_and_stores_the_path(server_host, lab_home):
    host, hosts_file = server_host
    done = clientlab("run", *QUICK, "-s", "get-small,download-file", "-p", "download-file.size=1MB",
                     "--server-host", "nshost", "--hosts", str(hosts_file), "--format", "json", home=lab_home)
    assert done.returncode == 0, done.stderr
    assert f"bench server on host nshost ({host.address})" in done.stderr
    with sqlite3.connect(lab_home / "results.sqlite") as db:
        config = json.loads(db.execute("SELECT config FROM runs").fetchone()[0])
        trials = [json.loads(s) for (s,) in db.execute("SELECT server FROM trials WHERE kind = 'timed'")]
    assert config["server_host"] == "nshost"
    net = config["net"]
    assert net["profile"] == "server-host:nshost" and net["host"] == host.address
    assert net["lab_address"] == host.local_address, "it serves the address the lab host has on its link"
    assert net["measured_rtt_ms"] > 0 and net["measured_download_mbit"] > 0 and net["measured_upload_mbit"] > 0
    assert set(_cells(lab_home).values()) == {("ok", None)}
    assert len(trials) == 4 and all(t["cpu_s"] > 0 for t in trials), "the server's CPU, read from the server"


def test_the_server_host_serves_only_the_lab_host_and_its_control_port_stays_off_the_network(server_host):
    host, hosts_file = server_host
    with ServerHost(host.host(), hosts_file.parent / "known_hosts", measure=False) as server:
        port = server.endpoint.http_port
        request = b"GET /bytes/3 HTTP/1.1\r\nHost: lab\r\n\r\n"
        with socket.create_connection((host.address, port), timeout=5) as sock:
            sock.sendall(request)
            assert sock.recv(100).startswith(b"HTTP/1.1 200 OK"), "the lab host is served"
        # another client: the host itself, from its own address
        probe = ("import socket,sys; s=socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); "
                 "s.sendall(b'GET /bytes/3 HTTP/1.1\\r\\nHost: lab\\r\\n\\r\\n'); print(repr(s.recv(100)))")
        other = subprocess.run(["ip", "netns", "exec", host.name, sys.executable, "-c", probe, host.address, str(port)],
                               capture_output=True, text=True, timeout=30, check=False)
        assert other.stdout.strip() in ("b''", "") or "ConnectionResetError" in other.stderr, other
        with pytest.raises(OSError):
            socket.create_connection((host.address, server.info["control"]), timeout=5).close()
        assert server.counters()["requests"] >= 1, "the control port answers through the SSH forward"


def test_the_server_host_dying_mid_run_fails_the_open_cells_and_keeps_the_measured_ones(server_host, lab_home):
    host, hosts_file = server_host
    run = subprocess.Popen([sys.executable, "-m", "clientlab", "run", *QUICK, "-p", "count=200", "--trials", "30",
                            "-s", "get-small,post-form,download-file", "-p", "download-file.size=1MB",
                            "--interleave", "scenario", "--server-host", "nshost", "--hosts", str(hosts_file)],
                           env=_env(lab_home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and run.poll() is None and not any(st == "ok" for st, _ in _cells_now(lab_home)):
            time.sleep(0.2)
        assert run.poll() is None, run.communicate()
        assert any(st == "ok" for st, _ in _cells_now(lab_home)), "no cell was measured before the host died"
        host.crash()
        _stdout, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    cells = _cells(lab_home)
    measured = [k for k, (st, _) in cells.items() if st == "ok"]
    failed = {k: r for k, (st, r) in cells.items() if st == "failed"}
    assert measured and failed, (cells, stderr)
    assert all("nshost" in reason for reason in failed.values()), failed
    assert run.returncode != 0


def _cells_now(home: Path) -> list[tuple[str, str | None]]:
    try:
        return list(_cells(home).values())
    except sqlite3.OperationalError:   # not made yet
        return []


@pytest.mark.parametrize(("roles", "net", "said"), [
    ('["lab"]', "loopback", "needs one with the 'server' role"),
    ('["server"]', "wan-50ms", "use one or the other"),
])
def test_a_server_host_that_cannot_serve_is_refused_before_the_run(tmp_path, lab_home, roles, net, said):
    hosts_file = tmp_path / "hosts.toml"
    hosts_file.write_text(f'[[hosts]]\nname = "far"\naddress = "192.0.2.1"\nkey = "k"\nroles = {roles}\n')
    done = clientlab("run", *QUICK, "-s", "get-small", "--net", net, "--server-host", "far", "--hosts", str(hosts_file),
                     home=lab_home)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert not (lab_home / "results.sqlite").exists() or not _cells(lab_home)


def test_an_experiment_runs_its_loopback_parts_on_the_server_host_and_not_its_lab_networks(server_host, store, tmp_path,
                                                                                          test_drivers):
    from clientlab.experiment import spec
    from clientlab.experiment.execute import run_experiment
    from clientlab.runner import RunOptions

    host, hosts_file = server_host
    path = tmp_path / "far.toml"
    path.write_text('title = "t"\nseed = "000"\narticle = "a"\n'
                    '[[parts]]\nname = "here"\ndrivers = ["python-fake-reference"]\nscenarios = ["get-small"]\n'
                    'trials = 2\nparams = { count = 20 }\n'
                    '[[parts]]\nname = "lan"\ndrivers = ["python-fake-reference"]\nscenarios = ["get-small"]\n'
                    'trials = 2\nnet = "lan-1g"\n')
    e = spec.load_file(path)
    options = RunOptions(warmup=0, placement="free", host_probe=False)
    result = run_experiment(store, e, quick=False, options=options, extra_drivers=[test_drivers["python-fake-reference"]],
                            on_note=lambda _n: None, server_host=(host.host(), hosts_file.parent / "known_hosts"))
    cells = {c["scenario"]: c for c in store.cells(result.run_id)}
    assert cells["get-small[here]"]["status"] == "ok", cells["get-small[here]"]["reason"]
    lan = cells["get-small[lan,net=lan-1g]"]
    assert lan["status"] == "unsupported" and "on host nshost (--server-host)" in lan["reason"]
    assert store.run(result.run_id)["config"]["networks"]["loopback"]["profile"] == "server-host:nshost"


def test_crosscheck_bare_puts_the_lab_and_the_plain_loop_against_the_server_host(server_host, lab_home):
    _host, hosts_file = server_host
    done = clientlab("crosscheck", "--bare", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference",
                     "-s", "get-small", "-p", "count=50", "--trials", "2", "--server-host", "nshost",
                     "--hosts", str(hosts_file), home=lab_home)
    assert done.returncode in (0, 1), done.stderr   # 1: the lab and the loop disagreed, which a test cannot fix
    assert "server on host nshost" in " ".join(done.stdout.split())
    assert "cells within 10% of the driver's plain loop" in done.stdout
    with sqlite3.connect(lab_home / "results.sqlite") as db:
        config = json.loads(db.execute("SELECT config FROM runs").fetchone()[0])
    assert config["net"]["profile"] == "server-host:nshost" and config["server_host"] == "nshost"
    assert config["calibration"][0]["pairs"], "the plain loop ran against the server host"


def test_crosscheck_against_nginx_does_not_take_a_server_host(tmp_path, lab_home):
    done = clientlab("crosscheck", "--server-host", "far", "--hosts", str(tmp_path / "none.toml"), home=lab_home)
    assert done.returncode == 2 and "goes with --bare" in done.stderr, done.stderr
