"""The typed records read every shape stores hold and write back exactly what they read."""

from __future__ import annotations

import json

import pytest

from clientlab.record import (
    BehaviourOutcome,
    Cell,
    CellFigures,
    FleetBatch,
    Finding,
    Layers,
    LayerShare,
    Mode,
    PlainCheck,
    RunConfig,
    ServerSummary,
    WallStats,
)

# a cell's figures as the code before the records stored them (cell_figures, then the runner's
# notes, then the diagnosis), key for key and in that order
STORED_SERVER = {
    "connections": 2, "requests": 1000, "tls": {"full": 1, "resumed": 1}, "versions": {"HTTP/1.1": 1000},
    "bytes_in": 90000, "bytes_out": 1100000, "requests_per_conn": {"min": 1, "median": 500.0, "max": 999},
    "carrying_connections": 2, "statuses": {"200": 1000}, "resp_body_bytes": 1024000, "req_body_bytes": 0,
    "multi_read_requests": 0, "stalled_requests": 0, "max_read_gap_ms": 0.0, "stall_gap_ms_median": 0.0,
    "expect_continue": 0, "expect_stalled": 0, "gzip": 0, "idle_connections": 0, "kept_open": 0,
    "alt_svc": 'h3=":4433"', "cycle_ms": {"p50": 0.3, "p90": 0.4, "p99": 0.6, "max": 1.2}, "cpu_s": 0.01,
    "port": 40123,
}
STORED_FIGURES = {
    "throughput": 3125.0, "unit": "req/s", "requests": 1000, "work_bytes": 1024000.0,
    "wall_s": {"median": 0.32, "mean": 0.32, "stddev": 0.0158, "mad": 0.01, "min": 0.3, "max": 0.34,
               "ci_low": 0.3, "ci_high": 0.34, "ci_confidence": 0.9375},
    "precision": 0.0625, "relative_spread": 0.0463, "noisy": False, "outliers": [4], "modes": None, "trials": 5,
    "cpu_user_s": 0.1, "cpu_precision": 0.0, "cpu_sys_s": 0.05, "page_faults": 12.0, "peak_rss_kb": 20000,
    "setup_s": 0.01, "startup_s": 0.2, "server": STORED_SERVER,
    "elapsed_s": 4.2, "scenario_requests": 2000, "disturbed_trials": 1, "disturbed_kept": 0, "slow_host_skips": 0,
    "processes": 3, "budget_stopped": False, "measured_by": "cgroup v2", "kept_warm": False, "notes": [],
    "findings": [{"rule": "nagle-delayed-ack", "severity": "warn", "title": "Nagle", "evidence": "e", "fix": "f"}],
}
STORED_CELL = {
    "id": 7, "run_id": 3, "driver": "python-requests", "scenario": "get-small[http=2]",
    "params": {"count": 2000, "client": {"http": "2", "keep_alive": True, "concurrency": 1}},
    "status": "ok", "reason": None, "metric": "requests", "figures": STORED_FIGURES,
    "versions": {"python": "3.11.7", "requests": "2.32.3"}, "started_at": 1.0, "finished_at": 2.0,
    "departures": ["why"], "fingerprint": "ab" * 32,
}
RUN_CONFIG = {  # clientlab run's, with what update_config adds while it runs
    "drivers": ["c-libcurl"], "scenarios": ["get-small"], "params": {"get-small": {"count": 2000}},
    "client": {"get-small": {"http": "1.1"}}, "warmup": 1, "fresh_process": False,
    "stop": {"min_trials": 3, "max_trials": 10}, "net": {"profile": "loopback", "asked": "loopback"},
    "lab_version": "abc", "placement": "split", "trial_seconds": 0.3, "retries": 3, "interleave": "run",
    "time_budget_s": None, "forks": 3, "runtimes": [], "server_host": "bench1",
    "fleet": {"uid": "f", "batch": 1, "batches": 2, "host": "lab1", "baseline": "c-libcurl"},
}


def _text(value: dict) -> str:
    return json.dumps(value)  # key order included


@pytest.mark.parametrize("cls, stored", [
    (CellFigures, STORED_FIGURES), (ServerSummary, STORED_SERVER), (Cell, STORED_CELL), (RunConfig, RUN_CONFIG),
    (WallStats, STORED_FIGURES["wall_s"]),
    (RunConfig, {"experiment": "perl-clients", "quick": True, "seed": 7, "net": {"profiles": ["loopback"]},
                 "cells_planned": 4, "retries": 3, "interleave": "run", "time_budget_s": 60.0,
                 "placement": "split", "networks": {"loopback": {"profile": "loopback"}}}),
    (RunConfig, {"kind": "selfbench-placement", "drivers": ["x"], "scenarios": ["get-small"], "net": "loopback"}),
    (RunConfig, {"kind": "crosscheck", "drivers": [], "scenarios": [], "net": {"profile": "loopback"},
                 "placement": "split", "nginx": "1.22.1", "writes": [{"scenario": "get-small"}]}),
])
def test_a_stored_record_is_written_back_key_for_key_in_its_order(cls, stored):
    assert _text(cls.from_json(stored).to_json()) == _text(stored)


def test_every_record_built_here_reads_back_equal():
    figures = CellFigures(
        throughput=10.0, unit="MB/s", requests=5, work_bytes=5e6, wall_s=WallStats(median=0.5, ci_low=0.4, ci_high=0.6),
        modes=(Mode(12.0, 3, label="heap"), Mode(6.0, 2, label="fresh pages", cause="a page fault per 4 KB")),
        cpu_user_s=0.2, cpu_sys_s=0.1, server=ServerSummary(requests=5, versions={"HTTP/3.0": 5}),
        notes=("n",), findings=(Finding("r", "warn", "t", "e", "f"),),
        layers=Layers("perf", 900, 0.02, (LayerShare("library", 12.5, 0.4), LayerShare("kernel", 20.0, 0.6))),
        plain=PlainCheck(ratio=1.04, ratio_ci_low=1.01, ratio_ci_high=1.08, lab_s_per_request=1e-4,
                         plain_s_per_request=0.96e-4, pairs=10, compared=10, run_id=42),
        behaviours=(BehaviourOutcome("redirect-cross-host", "ok"),))
    records = [figures, Cell(id=1, run_id=2, driver="d", scenario="s", params={"count": 5}, status="ok",
                             metric="bytes", figures=figures, departures=("why",)),
               RunConfig(drivers=("a",), fleet=FleetBatch(uid="u", batch=1, batches=2, host="h", baseline="a"))]
    for record in records:
        again = type(record).from_json(json.loads(json.dumps(record.to_json())))
        assert again == record


def test_old_stores_shapes_read_with_defaults_and_unknown_keys_kept():
    oldest = {"throughput": 100, "unit": "req/s", "wall_s": {"median": 1.0}, "modes": None, "someday": {"x": 1}}
    f = CellFigures.from_json(oldest)
    assert (f.throughput, f.modes, f.cpu_precision, f.page_faults, f.server, f.findings) == (100, None, None, None,
                                                                                            None, ())
    assert f.wall_s.median == 1.0 and f.wall_s.ci_low is None and f.extra == {"someday": {"x": 1}}
    assert f.to_json() == oldest
    assert CellFigures.from_json(None) == CellFigures() and Cell.from_json({"figures": None}).figures is None
    assert CellFigures.from_json({"modes": [{"throughput": 2.0, "trials": 3}]}).modes == (Mode(2.0, 3),)


def test_old_field_names_are_read_and_written_under_the_current_name():
    # RunConfig keeps the run's network under "net"; a record class may read another name too
    from dataclasses import dataclass

    from clientlab.record import Record, key

    @dataclass(frozen=True, slots=True)
    class Renamed(Record):
        seconds: float | None = key(old=("secs",))

    assert Renamed.from_json({"secs": 2.0, "a": 1}).seconds == 2.0
    assert list(Renamed.from_json({"secs": 2.0, "a": 1}).to_json().items()) == [("seconds", 2.0), ("a", 1)]


def test_a_field_set_on_a_read_record_is_written_where_it_was_or_after_the_rest():
    stored = {k: v for k, v in STORED_FIGURES.items() if k != "findings"}
    f = CellFigures.from_json(stored).with_(findings=(Finding("r", "info", "t", "e", "f"),), throughput=1.0)
    out = f.to_json()
    assert list(out) == [*stored, "findings"] and out["throughput"] == 1.0
    assert out["findings"] == [{"rule": "r", "severity": "info", "title": "t", "evidence": "e", "fix": "f"}]


def test_a_record_built_here_leaves_out_what_later_work_adds_until_it_is_there():
    built = CellFigures(throughput=1.0, unit="req/s").to_json()
    assert not {"findings", "layers", "plain", "behaviours", "elapsed_s", "notes"} & set(built)
    assert {"modes", "startup_s", "page_faults", "server"} <= set(built)  # written as null, as before
    assert CellFigures(notes=(), budget_stopped=False).to_json()["notes"] == []


def test_derived_figures_are_those_consumers_computed_by_hand():
    f = CellFigures.from_json(STORED_FIGURES)
    assert f.cpu_s == pytest.approx(0.15) and f.cpu_us_per_request == pytest.approx(150.0)
    assert f.cpu_per_mb_s == pytest.approx(0.15 / 1.024) and f.cpu_per_work == pytest.approx(0.15 / 1000)
    low, high = f.throughput_interval
    assert low == pytest.approx(3125.0 * 0.32 / 0.34) and high == pytest.approx(3125.0 * 0.32 / 0.3)
    in_bytes = f.with_(unit="MB/s")
    assert in_bytes.in_bytes and in_bytes.cpu_per_work == pytest.approx(0.15 / 1.024)
    assert not f.cut_by_budget and f.with_(budget_stopped=True).cut_by_budget
    assert CellFigures().cpu_us_per_request is None and CellFigures().throughput_interval is None
    assert f.server_seen.handshakes == 2 and not f.server_seen.quic and CellFigures().server_seen == ServerSummary()


def test_a_cell_says_whether_it_was_measured_and_what_its_client_asked():
    cell = Cell.from_json(STORED_CELL)
    assert cell.measured and cell.client["http"] == "2" and cell.label == "get-small[http=2]"
    assert cell.departures == ("why",) and cell.to_json()["departures"] == ["why"]
    assert not Cell.from_json({**STORED_CELL, "status": "failed", "figures": None}).measured
    assert Cell.from_json({**STORED_CELL, "params": {}}).client == {}


def test_a_run_config_names_its_network_however_it_was_stored():
    assert RunConfig.from_json(RUN_CONFIG).net_profile == "loopback"
    assert RunConfig.from_json({"net": "loopback"}).net_profile == "loopback"
    assert RunConfig.from_json({}).net_profile is None and RunConfig.from_json(RUN_CONFIG).fleet_host == "lab1"
    assert RunConfig.from_json({"drivers": ["a"], "time_budget_s": None}).to_json() == {"drivers": ["a"],
                                                                                        "time_budget_s": None}


def test_a_layer_is_found_by_name():
    layers = Layers.from_json({"profiler": "perf", "samples": 10, "overhead": None,
                               "shares": [{"layer": "tls", "us_per_request": 3.0, "share": 0.1}]})
    assert layers.share_of("tls") == LayerShare("tls", 3.0, 0.1) and layers.share_of("kernel") is None


def test_every_key_the_config_writers_store_is_a_typed_field(test_drivers):
    from clientlab.cli.run import _run_config
    from clientlab.runner import RunOptions, loopback_config
    from tests.support.fixtures import shipped

    drivers, scenarios = list(test_drivers.values())[:2], [shipped("get-small", count=5)]
    written = [
        {**_run_config(drivers, scenarios, RunOptions(), "loopback", "loopback", ("node=22",)), "profile": True,
         "server_host": "bench1"},
        {**loopback_config("crosscheck", drivers, scenarios), "placement": "split", "nginx": "1.22.1",
         "writes": [{"scenario": "get-small"}], "calibration": [{"driver": "x", "pairs": []}]},
    ]
    for config in written:
        record = RunConfig.from_json(json.loads(json.dumps(config)))
        assert record.extra == {} and _text(record.to_json()) == _text(json.loads(json.dumps(config)))


def test_a_fleet_record_stored_with_the_old_job_numbers_reads_as_its_batch_and_writes_the_new_names():
    old = {"uid": "f", "job": 2, "jobs": 3, "host": "lab1", "baseline": "c-libcurl"}
    config = RunConfig.from_json({"drivers": ["c-libcurl"], "fleet": old})
    assert config.fleet is not None and (config.fleet.batch, config.fleet.batches, config.fleet_host) == (2, 3, "lab1")
    assert _text(config.to_json()["fleet"]) == _text({"uid": "f", "batch": 2, "batches": 3, "host": "lab1",
                                                      "baseline": "c-libcurl"})
