"""HTTP/3 in the lab: the scenario's version, the job's port and capability, and verification
that fails a client which did not speak HTTP/3 (no silent fallback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clientlab import paths, scenario
from clientlab.drivers.job import plan, required_capabilities
from clientlab.drivers.verify import check_trial
from clientlab.errors import LabError, LabInputError
from clientlab.servers.bench import BenchServer
from clientlab.servers.side import Endpoint

FILES = {f.name: f for f in scenario.discover()[0]}
ENDPOINT = Endpoint("127.0.0.1", 8080, 8443, Path("/nonexistent/ca.pem"), h3_port=8444)


def _get_small(**client):
    return FILES["get-small"].expand({"count": 2}).with_client(**client)


def test_http3_switches_to_https_and_refuses_cleartext():
    sc = _get_small(http="3")
    assert (sc.client.http, sc.client.scheme) == ("3", "https")
    with pytest.raises(LabInputError, match="QUIC"):
        _get_small(http="3", scheme="http")


def test_an_http3_job_goes_to_the_udp_port_and_needs_the_capability():
    planned = plan(_get_small(http="3"), ENDPOINT, Path("/tmp"), verify=False, tag="t")
    assert planned.job["requests"][0]["url"].startswith("https://127.0.0.1:8444/")
    assert planned.job["http"] == "3" and planned.job["tls_ca"]
    assert {"http3", "tls"} <= set(required_capabilities(planned))
    assert "http3" not in required_capabilities(plan(_get_small(http="2"), ENDPOINT, Path("/tmp"), False, "t"))


def test_a_server_without_http3_is_named_as_the_problem():
    no_h3 = Endpoint("127.0.0.1", 8080, 8443, Path("/nonexistent/ca.pem"))
    with pytest.raises(LabError, match="no HTTP/3"):
        plan(_get_small(http="3"), no_h3, Path("/tmp"), verify=False, tag="t")


def _report(http: str) -> dict:
    return {"responses": [{"r": 0, "status": 200, "bytes": 1024, "http": http}] * 2, "errors": []}


def _snapshot(version: str) -> dict:
    return {"requests": 2, "connections": 1, "versions": {version: 2}}


def test_verification_passes_http3_seen_by_both_sides():
    planned = plan(_get_small(http="3"), ENDPOINT, Path("/tmp"), verify=False, tag="t")
    assert check_trial(planned, _report("3"), _snapshot("HTTP/3.0")) == []


@pytest.mark.parametrize("client_says,server_saw", [("2", "HTTP/2.0"), ("3", "HTTP/2.0"), ("3", "HTTP/1.1")])
def test_a_client_that_fell_back_from_http3_fails_verification(client_says, server_saw):
    planned = plan(_get_small(http="3"), ENDPOINT, Path("/tmp"), verify=False, tag="t")
    problems = check_trial(planned, _report(client_says), _snapshot(server_saw))
    assert any(f"server saw requests in {{'{server_saw}': 2}}, the job asked for HTTP/3.0" in p for p in problems)
    assert any("fell back" in p for p in problems)


def test_the_bench_server_announces_and_rebinds_its_http3_port():
    with BenchServer() as server:   # its own: the shared one may have been rebound by other tests
        before = server.endpoint.h3_port
        assert before and server.info["h3"] == before
        after = server.rebind()
        assert after.h3_port and after.h3_port != before


def test_crosscheck_bare_puts_an_http3_driver_beside_its_own_plain_loop_over_http3(lab_home):
    import json
    import os
    import sqlite3
    import subprocess
    import sys

    (lab_home / "build").symlink_to(paths.lab_home() / "build")   # the drivers' build stamps
    done = subprocess.run([sys.executable, "-m", "clientlab", "crosscheck", "--bare", "--http", "3",
                           "-d", "go-net-http-http3", "-s", "get-small", "-p", "count=50", "--trials", "2"],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "CLIENTLAB_HOME": str(lab_home), "COLUMNS": "200"})
    assert done.returncode in (0, 1), done.stderr   # 1: lab and loop disagreed, which a test cannot fix
    with sqlite3.connect(lab_home / "results.sqlite") as db:
        (params,) = db.execute("SELECT params FROM cells").fetchone()
        (config,) = db.execute("SELECT config FROM runs").fetchone()
    assert json.loads(params)["client"]["http"] == "3"
    assert json.loads(config)["calibration"][0]["pairs"], "the plain loop ran over HTTP/3 too"
