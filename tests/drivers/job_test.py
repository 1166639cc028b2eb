"""Which capabilities a job needs: the lab's one rule (drivers keep none of their own)."""

from __future__ import annotations

from pathlib import Path

from clientlab import scenario
from clientlab.drivers.job import plan, required_capabilities
from clientlab.servers.side import Endpoint

FILES = {f.name: f for f in scenario.discover()[0]}
ENDPOINT = Endpoint("127.0.0.1", 8080, 8443, Path("/nonexistent/ca.pem"))


def _needs(name: str, params: dict, **client) -> list[str]:
    sc = FILES[name].expand(params)
    if client:
        sc = sc.with_client(**client)
    return required_capabilities(plan(sc, ENDPOINT, Path("/tmp"), verify=False, tag="t"))


def test_keep_alive_is_needed_where_a_connection_could_be_reused():
    assert "keepalive" in _needs("get-small", {"count": 20})
    assert "keepalive_off" in _needs("get-small", {"count": 20}, keep_alive=False)
    assert "keepalive" not in _needs("get-small", {"count": 20}, keep_alive=False)


def test_a_single_request_needs_no_keep_alive():
    needed = _needs("download-file", {"count": 1, "size": "1MB"})
    assert "keepalive" not in needed and "keepalive_off" not in needed and "sink_file" in needed


def test_a_followed_redirect_makes_a_single_entry_two_requests():
    assert "keepalive" in _needs("redirect-get", {"count": 1})


def test_a_job_names_a_client_timeout_only_where_its_scenario_does():
    # the scenario's own timeout_s is the lab's limit on a trial, never the client's setting
    sc = FILES["get-small"].expand({"count": 20})
    assert plan(sc, ENDPOINT, Path("/tmp"), verify=False, tag="t").job["timeout_s"] is None
    timed = sc.with_client(timeout_s=5.0)
    assert plan(timed, ENDPOINT, Path("/tmp"), verify=False, tag="t").job["timeout_s"] == 5.0
    assert timed.label == "get-small[timeout_s=5.0]"
