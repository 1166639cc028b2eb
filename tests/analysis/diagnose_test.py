"""Each diagnosis rule fires on a test driver that is slow in its way, and never on clean ones."""

from __future__ import annotations

import re

import pytest

from clientlab.analysis.diagnose import diagnose_run
from clientlab.analysis.stats import StopRule
from clientlab.drivers import manifest
from clientlab.netlab import namespaces
from clientlab.netlab.lab import NetLab
from clientlab.netlab.profile import Profile
from clientlab.record import Cell, CellFigures, ServerSummary
from clientlab.runner import CellRunner, RunOptions
from tests.support.fixtures import shipped

# finds stalls by their timing: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


@pytest.fixture
def diagnosed(bench_server, store, test_drivers):
    """run([(driver_id, scenario), ...]) -> {(driver, scenario label): [rule names]} for one run."""

    def run(cells):
        run_id = store.start_run({}, {})
        options = RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1), placement="free")
        runner = CellRunner(bench_server, store, run_id, options)
        everything = {**test_drivers, **{d.id: d for d in manifest.discover()[0]}}
        for driver_id, sc in cells:
            result = runner.run_cell(everything[driver_id], sc)
            assert result.status == "ok", f"{driver_id} × {sc.label}: {result.reason}"
        stored = store.cell_records(run_id)
        found = diagnose_run(stored)
        return {(c.driver, c.scenario): [f.rule for f in found[c.id]] for c in stored}

    return run


def test_clean_driver_gets_no_findings(diagnosed):
    found = diagnosed([("python-fake-reference", s) for s in (
        shipped("get-small", count=50), shipped("post-form", count=50), shipped("post-multipart", count=50),
        shipped("redirect-get", count=20), shipped("cookie-session", count=20),
        shipped("download-file", size="20MB"),
        shipped("get-small", count=20).with_client(scheme="https"),
    )])
    assert all(rules == [] for rules in found.values()), found


def test_no_connection_reuse(diagnosed):
    found = diagnosed([("python-fake-no-reuse", shipped("get-small", count=30))])
    assert found[("python-fake-no-reuse", "get-small")] == ["no-connection-reuse"]


def test_nagle_stall_on_a_two_write_post(diagnosed):
    found = diagnosed([("python-fake-nagle", shipped("post-form", count=30))])
    assert found[("python-fake-nagle", "post-form")] == ["nagle-delayed-ack"]


def test_expect_100_continue_stall(diagnosed):
    found = diagnosed([("python-fake-expect-stall", shipped("post-form", count=2))])
    assert found[("python-fake-expect-stall", "post-form")] == ["expect-100-continue"]


def test_full_tls_handshake_per_request(diagnosed):
    sc = shipped("get-small", count=20).with_client(scheme="https", keep_alive=False)
    found = diagnosed([("python-fake-reference", sc)])
    assert found[("python-fake-reference", sc.label)] == ["tls-full-handshake-per-request"]


def test_redirects_that_open_new_connections(diagnosed):
    found = diagnosed([("python-fake-redirect-new-conn", shipped("redirect-get", count=15))])
    assert found[("python-fake-redirect-new-conn", "redirect-get")] == ["redirect-new-connections"]


def test_body_held_in_memory_although_streamed_to_a_file(diagnosed):
    found = diagnosed([("python-fake-buffer-file", shipped("get-small", count=5)),
                       ("python-fake-buffer-file", shipped("download-file", size="40MB"))])
    assert found[("python-fake-buffer-file", "download-file")] == ["whole-body-in-memory"]
    assert found[("python-fake-buffer-file", "get-small")] == []


def test_http2_offered_and_not_used_by_parallel_http11(diagnosed):
    over_tls = shipped("parallel-feeds").with_client(scheme="https")
    found = diagnosed([("python-aiohttp", over_tls), ("python-aiohttp", shipped("parallel-feeds"))])
    assert found[("python-aiohttp", over_tls.label)] == ["http2-not-used"]
    assert found[("python-aiohttp", "parallel-feeds")] == []


def test_parallel_requests_over_http3_are_not_said_to_miss_http2(diagnosed):
    over_h3 = shipped("parallel-feeds").with_client(http="3")
    found = diagnosed([("python-niquests", over_h3), ("go-net-http-http3", over_h3)])
    assert "http2-not-used" not in found[("python-niquests", over_h3.label)]
    # quic-go's transport multiplexes the 20 in flight on one connection
    assert found[("go-net-http-http3", over_h3.label)] == []


@pytest.mark.skipif(namespaces.why_unavailable() is not None, reason=str(namespaces.why_unavailable()))
def test_dns_lookup_per_request_seen_by_the_lab_dns(store, test_drivers):
    with NetLab(Profile(name="test", description="namespaces and lab DNS")) as lab:
        run_id = store.start_run({}, {})
        runner = CellRunner(lab, store, run_id, RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1),
                                                          placement="free"))
        for driver_id in ("python-fake-no-reuse", "python-fake-reference"):
            assert runner.run_cell(test_drivers[driver_id], shipped("get-small", count=30)).status == "ok"
    found = {c["driver"]: [f.rule for f in fs] for c in store.cells(run_id)
             for cid, fs in diagnose_run(store.cell_records(run_id)).items() if cid == c["id"]}
    assert "dns-lookup-per-request" in found["python-fake-no-reuse"]
    assert found["python-fake-reference"] == []


@pytest.mark.parametrize("concurrency,expected", [(20, ["connections-over-server-cap"]), (4, [])])
def test_more_connections_than_the_server_takes(bench_server, diagnosed, concurrency, expected):
    bench_server.configure(max_conns=4)
    try:
        sc = shipped("parallel-feeds", feeds=100).with_client(concurrency=concurrency)
        found = diagnosed([("c-libcurl-multi", sc)])
    finally:
        bench_server.configure(max_conns=0)
    assert list(found.values()) == [expected]


def test_bodies_mapped_anew_every_request_are_found_by_their_page_faults(diagnosed):
    # a 335 KB body copied into freshly mapped memory each time: a page fault per 4 KB of it
    found = diagnosed([("python-fake-fresh-body", shipped("get-json-335k", count=20))])
    assert found[("python-fake-fresh-body", "get-json-335k")] == ["body-memory-from-the-kernel"]


def test_a_finding_seen_on_several_scenarios_is_printed_once_for_its_driver():
    import io

    from rich.console import Console

    from clientlab.output.diagnosis import print_findings

    reuse = {"rule": "no-connection-reuse", "severity": "warn", "title": "No connection reuse",
             "evidence": "20 requests came on 20 connections", "fix": "Keep one client"}
    cells = [Cell.from_json({"driver": "cli-x", "scenario": s, "status": "ok", "figures": {"findings": [reuse]}})
             for s in ("get-small", "post-form", "post-multipart")]
    console = Console(file=io.StringIO(), width=200)
    print_findings(console, cells)
    text = console.file.getvalue()
    assert text.count("No connection reuse") == 1
    assert "cli-x × 3 scenarios (get-small, post-form, post-multipart)" in text and "(on get-small)" in text


def test_one_body_in_memory_is_no_finding_where_the_scenario_asks_for_memory():
    from clientlab.analysis.diagnose import CellView, whole_body_in_memory

    body = 20_000_000
    cell = CellView("x-y", "download-memory", {}, ["memory"],
                    CellFigures(peak_rss_kb=(5_000_000 + body) // 1024,
                                server=ServerSummary(requests=1, resp_body_bytes=body)),
                    5_000_000 // 1024)
    assert whole_body_in_memory(cell) is None
    as_file = CellView("x-y", "download-file", {}, ["file"], cell.figures, cell.baseline_rss_kb)
    assert whole_body_in_memory(as_file) is not None


def test_the_offer_of_http3_is_stored_with_a_tls_cell_and_not_a_plain_one(bench_server, store, test_drivers):
    run_id = store.start_run({}, {})
    runner = CellRunner(bench_server, store, run_id, RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1),
                                                                placement="free"))
    for sc in (shipped("get-small", count=5).with_client(scheme="https"), shipped("get-small", count=5)):
        assert runner.run_cell(test_drivers["python-fake-reference"], sc).status == "ok"
    offers = {c["scenario"]: c["figures"]["server"].get("alt_svc") for c in store.cells(run_id)}
    assert offers["get-small"] is None
    assert re.fullmatch(r'h3=":\d+"; ma=86400', offers["get-small[scheme=https]"])  # each trial's own port


def test_quic_sessions_resumed_without_0rtt(diagnosed):
    # a QUIC connection per GET: libcurl resumes each TLS session and still waits out the handshake
    fresh = shipped("get-small", count=30).with_client(http="3", keep_alive=False)
    kept = shipped("get-small", count=30).with_client(http="3")
    found = diagnosed([("python-curl-cffi", fresh), ("go-net-http-http3", kept)])
    assert found[("python-curl-cffi", fresh.label)] == ["zero-rtt-unused"]
    assert found[("go-net-http-http3", kept.label)] == []


def _stored(driver: str, http: str, rate: float, precision: float = 0.02, **server) -> Cell:
    client = {"scheme": "https", "http": http, "concurrency": 20}
    version = {"1.1": "HTTP/1.1", "2": "HTTP/2.0", "3": "HTTP/3.0"}[http]
    return Cell.from_json({
        "id": hash((driver, http)), "driver": driver, "scenario": f"parallel-feeds[http={http}]", "status": "ok",
        "params": {"feeds": 100, "part": "lossy", "value": http, "client": client, "sinks": ["memory"]},
        "figures": {"throughput": rate, "unit": "req/s", "precision": precision, "peak_rss_kb": 1000,
                    "server": {"requests": 100, "connections": 1, "versions": {version: 100},
                               "carrying_connections": 1, **server}}})


@pytest.mark.parametrize("h3_rate,expected", [(300.0, ["http3-not-used"]), (210.0, []), (100.0, [])])
def test_http3_offered_and_not_used_where_the_run_measured_it_faster(h3_rate, expected):
    h2 = _stored("x-y", "2", 200.0, alt_svc='h3=":4433"')
    found = diagnose_run([h2, _stored("x-y", "3", h3_rate)])
    assert [f.rule for f in found[h2.id]] == expected   # 210 is within both cells' noise and 5 %


def test_http3_not_used_needs_the_offer_and_the_same_work():
    unoffered = _stored("x-y", "2", 200.0)
    other_driver = _stored("x-z", "2", 200.0, alt_svc='h3=":4433"')
    found = diagnose_run([unoffered, other_driver, _stored("x-y", "3", 400.0)])
    assert found[unoffered.id] == [] and found[other_driver.id] == []


@pytest.mark.parametrize("http,carrying,expected", [("3", 20, ["multiplexing-unused"]), ("2", 10, ["multiplexing-unused"]),
                                                    ("3", 1, []), ("3", 3, []), ("1.1", 20, [])])
def test_parallel_requests_on_a_connection_each_are_found_for_http2_and_http3(http, carrying, expected):
    cell = _stored("x-y", http, 200.0, connections=carrying, carrying_connections=carrying)
    assert [f.rule for f in diagnose_run([cell])[cell.id]] == expected


@pytest.mark.parametrize("language, names, never", [
    ("go", "Go's heap", "MALLOC_MMAP_THRESHOLD_"),
    ("java", "Java's heap", "MALLOC_MMAP_THRESHOLD_"),
    ("python", "MALLOC_MMAP_THRESHOLD_", "Go's"),
])
def test_the_fresh_pages_fix_names_the_runtimes_own_allocator(language, names, never):
    from clientlab.analysis.diagnose import _fresh_pages_fix

    fix = _fresh_pages_fix(language, glibc=True)
    assert names in fix and never not in fix


def test_the_fresh_pages_fix_leaves_glibc_out_where_its_tunables_changed_nothing():
    from clientlab.analysis.diagnose import _fresh_pages_fix

    assert "MALLOC_MMAP_THRESHOLD_" not in _fresh_pages_fix("python", glibc=False)
