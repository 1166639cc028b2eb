"""The bench server's process: where it may listen, its control secret, fresh ports per trial."""

from __future__ import annotations

import http.client
import socket
import subprocess
from pathlib import Path

import pytest

from clientlab import paths
from clientlab.errors import LabError
from clientlab.servers.bench import SECRET_HEADER, BenchServer


def _start_raw(*args: str, stdin: bytes = b"0123456789abcdef-secret\n") -> subprocess.CompletedProcess:
    tls = paths.tls_dir()
    argv = [str(paths.server_binary()), *args, "--tls-cert", str(tls / "server.pem"), "--tls-key",
            str(tls / "server-key.pem")]
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=30)


@pytest.mark.parametrize("args", [
    ("--listen", "0.0.0.0"), ("--listen", "::"), ("--listen", ""), ("--listen", "192.0.2.1"),
    ("--listen", "10.77.1.2"), ("--listen", "127.0.0.1", "--control-listen", "0.0.0.0"),
    ("--listen", "127.0.0.1", "--control-listen", ""), ("--listen", "127.0.0.1", "--control-listen", "::"),
])
def test_server_refuses_addresses_outside_loopback_and_the_lab(args):
    done = _start_raw(*args)
    assert done.returncode != 0
    assert done.stdout == b""  # never printed "listening"
    assert b"refused" in done.stderr or b"empty" in done.stderr, done.stderr


def test_server_without_a_secret_does_not_start():
    done = _start_raw("--listen", "127.0.0.1", stdin=b"")
    assert done.returncode != 0 and b"secret" in done.stderr and done.stdout == b""


def test_bench_server_on_a_refused_address_fails_with_the_reason():
    with pytest.raises(LabError, match="refused"):
        BenchServer(host="0.0.0.0")


def _control(server: BenchServer, method: str, path: str, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", server.info["control"], timeout=10)
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_control_port_needs_the_run_secret(bench_server):
    for method, path in (("GET", "/health"), ("GET", "/counters"), ("POST", "/reset"), ("POST", "/rebind")):
        assert _control(bench_server, method, path, {}) == 403
        assert _control(bench_server, method, path, {SECRET_HEADER: "not-the-secret-at-all"}) == 403
    assert bench_server.counters()["requests"] >= 0  # the lab's own client carries it


def test_the_secret_is_in_no_argv_and_no_environment(bench_server):
    secret = bench_server._control.headers[SECRET_HEADER].encode()
    pid = bench_server.proc.pid
    assert secret not in Path(f"/proc/{pid}/cmdline").read_bytes()
    assert secret not in Path(f"/proc/{pid}/environ").read_bytes()
    assert secret not in Path("/proc/self/environ").read_bytes()  # so drivers, the lab's children, never inherit it


def _get(port: int, path: str = "/bytes/10") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_rebind_gives_fresh_ports_and_keeps_the_endpoint(bench_server):
    before = bench_server.endpoint
    kept = http.client.HTTPConnection("127.0.0.1", before.http_port, timeout=10)
    kept.request("GET", "/bytes/1")
    kept.getresponse().read()

    after = bench_server.rebind()
    assert after is bench_server.endpoint
    assert (after.http_port, after.https_port) != (before.http_port, before.https_port)
    assert after.http_port != before.http_port and after.https_port != before.https_port
    assert (after.host, after.ca_file) == (before.host, before.ca_file)
    assert _get(after.http_port) == 200
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", before.http_port), timeout=2).close()
    kept.request("GET", "/bytes/2")  # a connection accepted before the rebind is still served
    assert kept.getresponse().status == 200
    kept.close()
