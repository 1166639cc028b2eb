"""The behaviour matrix's second set of cases: the keep-alive race (FIN and RST, a GET and a
POST), the connect deadline (the dark port), a 303 after a POST and a redirect from https to
plain http, bombs, oversized heads and HTTP/2 streams the server did not process; judged from
the ledger, and the server's side from the lab's. Each fault against a fake driver that passes
it and one that fails it is in behave_test.py's table. No timed assertion (see behave_test.py)."""

from __future__ import annotations

import http.client

import pytest

from clientlab.behaviour import behave, cases as behaviour
from clientlab.behaviour.cases import Observed, judge
from clientlab.errors import LabInputError
from clientlab.output.behave import change_lines, changes, code, stored_matrix
from clientlab.record import BehaviourOutcome, CellFigures
from clientlab.report.behave import page

CASES = {bc.name: bc for bc in behaviour.discover().found}
RACES = ("keepalive-fin-get", "keepalive-rst-get", "keepalive-fin-post", "keepalive-rst-post")


def test_a_race_case_asks_for_a_kept_connection_and_numbers_its_two_requests():
    job = CASES["keepalive-rst-post"].job("127.0.0.1", 4321)
    first, second = job["requests"]
    assert first["method"] == "GET" and first["url"] == "http://127.0.0.1:4321/fault/keepalive-race?close=rst&n=1"
    assert second["method"] == "POST" and second["url"].endswith("?close=rst&n=2")
    assert second["form"] == {"order": "clientlab-order-1"} and "form" not in first
    assert job["keep_alive"] is True and job["concurrency"] == 1
    assert CASES["keepalive-rst-post"].capabilities() == ["http1", "keepalive", "form"]


def test_the_cases_on_origins_of_their_own_take_their_port_from_the_listening_line():
    ports = {"fault_a": 4321, "fault_s": 4400, "fault_dark": 4500}
    assert CASES["connect-deadline"].job("127.0.0.1", 4321, ports)["requests"][0]["url"] == \
        "http://127.0.0.1:4500/fault/landing"
    plain = CASES["redirect-to-plain"].job("127.0.0.1", 4321, ports, "/lab/ca.pem")
    assert plain["requests"][0]["url"] == "https://127.0.0.1:4400/fault/redirect-to-plain?to=%2Ffault%2Flanding"
    assert plain["tls_ca"] == "/lab/ca.pem" and "tls" in CASES["redirect-to-plain"].capabilities()
    with pytest.raises(Exception, match="fault_dark"):
        CASES["connect-deadline"].job("127.0.0.1", 4321, {"fault_a": 4321})


# -- judging the race from the ledger ------------------------------------------------------------

def entry(n: str, conn: int, seq: int, method: str = "GET", body: int = 0) -> dict:
    return {"origin": "a", "path": "/fault/keepalive-race", "n": n, "conn": conn, "seq": seq, "method": method,
            "body_bytes": body}


ANSWERED = [{"r": 0, "status": 200, "bytes": 9}]
DROPPED = [{"r": 1, "message": "RemoteDisconnected: Remote end closed connection without response"}]


def test_a_get_retried_once_on_a_new_connection_and_answered_is_correct():
    get = CASES["keepalive-fin-get"]
    retried = judge(get, Observed(0.01, ANSWERED + [{"r": 1, "status": 200, "bytes": 9}], [],
                                  [entry("1", 1, 1), entry("2", 1, 2), entry("2", 2, 1)]))
    assert retried.outcome == "ok" and "GET arrived 2× (conn 1 #2, conn 2 #1): retried once, then 200" in retried.detail
    not_retried = judge(get, Observed(0.01, ANSWERED, DROPPED, [entry("1", 1, 1), entry("2", 1, 2)]))
    assert not_retried.outcome == "no-retry" and "RemoteDisconnected" in not_retried.detail
    thrice = judge(get, Observed(0.01, ANSWERED + [{"r": 1, "status": 200, "bytes": 9}], [],
                                 [entry("1", 1, 1), entry("2", 1, 2), entry("2", 2, 1), entry("2", 3, 1)]))
    assert thrice.outcome == "retried-more"


def test_a_post_sent_again_is_a_duplicate_and_one_reported_as_an_error_is_correct():
    post = CASES["keepalive-rst-post"]
    dup = judge(post, Observed(0.01, ANSWERED + [{"r": 1, "status": 200, "bytes": 9}], [],
                               [entry("1", 1, 1), entry("2", 1, 2, "POST", 23), entry("2", 2, 1, "POST", 23)]))
    assert dup.outcome == "duplicated" and "POST arrived 2×" in dup.detail and "23 B" in dup.detail
    once = judge(post, Observed(0.01, ANSWERED, DROPPED, [entry("1", 1, 1), entry("2", 1, 2, "POST", 23)]))
    assert once.outcome == "ok"


def test_a_race_that_did_not_happen_shows_nothing():
    fresh = judge(CASES["keepalive-fin-get"], Observed(0.01, ANSWERED + [{"r": 1, "status": 200, "bytes": 9}], [],
                                                       [entry("1", 1, 1), entry("2", 2, 1)]))
    assert fresh.outcome == "not-reused"
    phantom = judge(CASES["keepalive-fin-post"], Observed(0.01, ANSWERED + [{"r": 1, "status": 200, "bytes": 9}], [],
                                                          [entry("1", 1, 1), entry("2", 1, 2, "POST", 23)]))
    assert phantom.outcome == "phantom"


def test_a_303_is_judged_by_the_method_and_body_length_that_reached_its_target():
    see = CASES["see-other-post"]
    posted = {"origin": "a", "path": "/fault/see-other", "method": "POST", "body_bytes": 42}
    landed = {"origin": "a", "path": "/fault/landing", "method": "GET", "body_bytes": 0}
    assert judge(see, Observed(0.01, [], [], [posted, landed])).outcome == "ok"
    again = judge(see, Observed(0.01, [], [], [posted, {**landed, "method": "POST", "body_bytes": 42}]))
    assert again.outcome == "kept-post" and "POST with a 42 B body" in again.detail
    assert judge(see, Observed(0.01, [], [], [posted, {**landed, "body_bytes": 42}])).outcome == "kept-body"
    assert judge(see, Observed(0.01, [{"r": 0, "status": 303, "bytes": 10}], [], [posted])).outcome == "not-followed"


def test_credentials_after_https_to_http_are_judged_from_the_tls_origin():
    plain = CASES["redirect-to-plain"]
    at_s = {"origin": "s", "credentials": ["Authorization", "Cookie", "Proxy-Authorization"]}
    ok = [{"r": 0, "status": 200, "bytes": 7}]
    assert judge(plain, Observed(0.01, ok, [], [at_s, {"origin": "a", "credentials": []}])).outcome == "ok"
    leaked = judge(plain, Observed(0.01, ok, [], [at_s, {"origin": "a", "credentials": ["Authorization"]}]))
    assert leaked.outcome == "leaked"
    refused = judge(plain, Observed(0.01, [{"r": 0, "status": 302, "bytes": 12}], [], [at_s]))
    assert refused.outcome == "ok" and "not followed" in refused.detail


# -- against the real bench server -----------------------------------------------------------------

# each fault against a fake driver that passes it and one that fails it: behave_test.py's table


def test_the_ledger_counts_each_numbered_request_of_a_race_exactly(bench_server):
    host, port = behave.fault_origin(bench_server)
    bench_server.faults(reset=True)
    kept = http.client.HTTPConnection(host, port, timeout=30)
    kept.request("GET", "/fault/keepalive-race?close=fin&n=1")
    assert kept.getresponse().read() == b"kept n=1\n"
    kept.request("POST", "/fault/keepalive-race?close=fin&n=2", body=b"order=1")
    with pytest.raises(http.client.RemoteDisconnected):
        kept.getresponse()
    fresh = http.client.HTTPConnection(host, port, timeout=30)
    fresh.request("POST", "/fault/keepalive-race?close=fin&n=2", body=b"order=1")
    assert fresh.getresponse().read() == b"kept n=2\n"
    kept.close()
    fresh.close()
    ledger = bench_server.faults(reset=True)
    assert ledger["numbered"] == {"/fault/keepalive-race?n=1": 1, "/fault/keepalive-race?n=2": 2}
    assert [(e["n"], e["seq"], e["method"], e["body_bytes"]) for e in ledger["entries"]] == [
        ("1", 1, "GET", 0), ("2", 2, "POST", 7), ("2", 1, "POST", 7)]


def test_the_codes_say_which_way_a_race_went():
    get, post = CASES["keepalive-fin-get"], CASES["keepalive-fin-post"]

    def cell(bc, outcome):
        return behave.BehaveCell("d", bc.name, "ok", behaviour.BehaviourOutcome(bc.name, outcome, ""))
    assert code(cell(get, "ok"), get) == "ok:retry" and code(cell(post, "ok"), post) == "ok:err"
    assert code(cell(get, "no-retry"), get) == "NORETRY" and code(cell(post, "duplicated"), post) == "DUP"


def test_a_bomb_is_judged_under_its_cap_and_its_peak_is_in_the_cell():
    bomb = CASES["gzip-bomb"]  # 1 GiB decoded, a 512 MiB cap
    refused = judge(bomb, Observed(0.5, [], [{"r": 0, "message": "decoded body over the limit"}], [], 41 << 20))
    assert refused.outcome == "ok" and refused.peak_bytes == 41 << 20 and "peak 41 MiB" in refused.detail
    killed = judge(bomb, Observed(None, [], [], [], 512 << 20, capped=True))
    assert killed.outcome == "held-all" and "512 MiB memory cap" in killed.detail
    java = judge(bomb, Observed(3.0, [], [{"r": 0, "message": "java.lang.OutOfMemoryError: Java heap space"}], [], 200 << 20))
    assert java.outcome == "held-all"
    curl = judge(CASES["big-header"], Observed(0.1, [], [{"r": 0, "message": "Out of memory"}], [], 9 << 20))
    assert curl.outcome == "ok"
    short = judge(bomb, Observed(1.0, [{"r": 0, "status": 200, "bytes": 100 << 20}], [], [], 300 << 20))
    assert short.outcome == "accepted-short"
    raw = judge(bomb, Observed(1.0, [{"r": 0, "status": 200, "bytes": 1_040_479}], [], [], 30 << 20))
    assert raw.outcome == "undecoded" and code(behave.BehaveCell("d", bomb.name, "ok", raw), bomb) == "raw:30M"
    cell = behave.BehaveCell("d", bomb.name, "ok", refused)
    assert code(cell, bomb) == "ok:41M"


def test_an_out_of_memory_error_far_below_the_cap_is_the_decoders_own_error():
    bomb = CASES["br-bomb"]  # 512 MiB cap
    seen = [{"r": 0, "message": "[27] Out of memory"}]
    ledger = [{"path": "/fault/br-bomb", "accept_encoding": "deflate, gzip, br, zstd"}]
    own = judge(bomb, Observed(0.4, [], seen, ledger, 67 << 20))
    assert own.outcome == "ok" and "peak 67 MiB" in own.detail
    near = judge(bomb, Observed(0.4, [], seen, ledger, 400 << 20))
    assert near.outcome == "held-all"


def test_a_time_limit_that_ends_a_bomb_mid_decode_is_not_a_limit_kept():
    bomb = CASES["gzip-bomb"]
    late = bomb.case.timeout_s + 0.2
    timed = judge(bomb, Observed(late, [], [{"r": 0, "message": "java.io.InterruptedIOException: timeout"}], [],
                                 439 << 20))
    assert timed.outcome == "timed-out" and code(behave.BehaveCell("d", bomb.name, "ok", timed), bomb) == "TIMEOUT"
    early = judge(bomb, Observed(0.5, [], [{"r": 0, "message": "read timed out"}], [], 439 << 20))
    assert early.outcome == "ok"  # an error before the time limit ends it is the client's own


def test_a_bomb_whose_decoded_size_fits_under_its_cap_is_refused(tmp_path):
    path = tmp_path / "small-bomb.toml"
    path.write_text('description = "x"\nfault = "gzip-bomb"\nquery = { mib = 256 }\ntimeout_s = 5\n'
                    'check = "bomb"\nmemory_cap_mib = 512\n')
    with pytest.raises(LabInputError, match="must exceed memory_cap_mib"):
        behaviour.load_case(path)


def test_the_bombs_decoded_size_is_the_servers(bench_server):
    host, port = behave.fault_origin(bench_server)
    conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.request("GET", "/fault/gzip-bomb?mib=1024")
    answer = conn.getresponse()
    assert int(answer.getheader("X-Decoded-Length")) == behaviour.bomb_bytes(1024)
    assert len(answer.read()) < behaviour.bomb_bytes(1024) // 1000
    conn.close()


# -- the matrix stored, reported and compared ---------------------------------------------------------

def stored_run(store, outcomes: dict, versions: dict, elapsed: dict | None = None) -> int:  # noqa: ANN001
    """A behave run as run_matrix stores it: one cell per (driver, case) with its outcome (and its
    go-to-done seconds, `elapsed`, 2.01 where not given)."""
    run_id = store.start_run({}, {"command": "test", "kind": "behave", "drivers": sorted({d for d, _ in outcomes}),
                                  "scenarios": sorted({c for _, c in outcomes})})
    for (driver, case), (outcome, detail) in outcomes.items():
        cell_id = store.start_cell(run_id, driver, case, CASES[case].params(), "behaviour")
        store.finish_cell(cell_id, "ok", None, CellFigures(behaviours=(BehaviourOutcome(
            case, outcome, detail, (elapsed or {}).get((driver, case), 2.01)),)),
                          versions)
    store.finish_run(run_id, "done")
    return run_id


def test_compare_of_two_behave_runs_names_the_cells_whose_behaviour_changed(store):
    a = stored_run(store, {("lib", "keepalive-fin-post"): ("duplicated", "POST arrived 2×"),
                           ("lib", "stall-headers"): ("ok", "error"), ("lib", "short-body"): ("ok", "error")},
                   {"lib": "1.0"})
    b = stored_run(store, {("lib", "keepalive-fin-post"): ("ok", "POST arrived 1×"),
                           ("lib", "stall-headers"): ("ok", "error"), ("lib", "short-body"): ("ok", "error")},
                   {"lib": "1.1"})
    changed = changes(store.cell_records(a), store.cell_records(b))
    assert [(c["driver"], c["case"], c["a"], c["b"]) for c in changed] == [("lib", "keepalive-fin-post", "DUP", "ok:err")]
    assert changed[0]["versions"] == {"lib": ("1.0", "1.1")}
    lines = change_lines(a, b, changed, 3)
    assert lines[0] == f"behave runs {a} → {b}: 1 of 3 shared cell(s) changed"
    assert "  lib keepalive-fin-post: DUP → ok:err" in lines and any("lib 1.0 → 1.1" in line for line in lines)
    assert change_lines(a, a, changes(store.cell_records(a), store.cell_records(a)), 3)[0].endswith(
        "the same outcome in all 3 cell(s) they share")


def test_compare_of_two_behave_runs_compares_outcomes_and_shows_a_figure_only_where_the_verdict_turned_on_it(store):
    # happy-eyeballs answered 1 ms sooner, the bomb's peak moved: the same verdicts, no change; the
    # deadline's time crossed its bound (ok to late): a change, with both times
    a = stored_run(store, {("lib", "happy-eyeballs"): ("ok", "second address"), ("lib", "gzip-bomb"): ("ok", "error"),
                           ("lib", "stall-headers"): ("ok", "error")}, {"lib": "1.0"},
                   {("lib", "happy-eyeballs"): 0.203, ("lib", "stall-headers"): 2.01})
    b = stored_run(store, {("lib", "happy-eyeballs"): ("ok", "second address"), ("lib", "gzip-bomb"): ("ok", "error"),
                           ("lib", "stall-headers"): ("late", "error")}, {"lib": "1.0"},
                   {("lib", "happy-eyeballs"): 0.202, ("lib", "stall-headers"): 2.6})
    cells_a, cells_b = store.cell_records(a), store.cell_records(b)
    assert code(stored_matrix(cells_a)[0][0], CASES["happy-eyeballs"]) == "ok:203ms"
    changed = changes(cells_a, cells_b)
    assert [(c["case"], c["a"], c["b"]) for c in changed] == [("stall-headers", "ok+10", "LATE+600")]
    assert changed[0]["outcome_a"] == "ok" and changed[0]["outcome_b"] == "late"


def test_the_report_page_has_the_matrix_with_each_cells_evidence_one_click_away(store):
    run_id = stored_run(store, {("lib", "keepalive-fin-post"): ("duplicated", "POST arrived 2× (conn 1 #2, conn 2 #1)"),
                                ("lib", "short-body"): ("ok", "error: IncompleteRead")}, {"lib": "1.0"})
    cells, cases = stored_matrix(store.cell_records(run_id))
    html = page(run_id, "a title", cells, cases)
    assert '<td class="finding" title="POST arrived 2× (conn 1 #2, conn 2 #1)"><details><summary>DUP</summary>' in html
    assert '<td class="kept" title="error: IncompleteRead"><details><summary>ok</summary>' in html
    assert "square/okhttp#2394" in html and "lib</th><td>lib 1.0" in html


def test_an_http2_case_asks_for_its_streams_at_once_over_http2():
    job = CASES["h2-goaway"].job("127.0.0.1", 4321, {"fault_a": 4321, "fault_h2": 4600}, "/lab/ca.pem")
    assert job["http"] == "2" and job["concurrency"] == 4 and job["tls_ca"] == "/lab/ca.pem"
    assert [r["url"] for r in job["requests"]] == [f"https://127.0.0.1:4600/fault/h2-goaway?n={n}" for n in range(1, 5)]
    assert CASES["h2-goaway"].capabilities() == ["tls", "http2", "parallel"]


def test_streams_the_server_did_not_process_are_judged_by_what_the_program_got():
    goaway = CASES["h2-goaway"]

    def h2(n: int, conn: int, seq: int) -> dict:
        return {"origin": "h2", "path": "/fault/h2-goaway", "n": str(n), "conn": conn, "seq": seq}
    first_conn = [h2(1, 1, 1), h2(2, 1, 2), h2(3, 1, 3), h2(4, 1, 4)]
    answered = [{"r": r, "status": 200, "bytes": 7} for r in range(4)]
    retried = judge(goaway, Observed(0.3, answered, [], first_conn + [h2(2, 2, 1), h2(3, 3, 1), h2(4, 4, 1)]))
    assert retried.outcome == "ok" and "7 request(s) on 4 connection(s), sent again: n=2 2×, n=3 2×, n=4 2×" in retried.detail
    lost = judge(goaway, Observed(0.3, answered[:1], [{"r": r, "message": "GOAWAY"} for r in (1, 2, 3)], first_conn))
    assert lost.outcome == "lost" and lost.detail.startswith("3 of 4 reported as errors")
    assert code(behave.BehaveCell("d", goaway.name, "ok", lost), goaway) == "LOST:3"
    alone = judge(goaway, Observed(0.3, answered, [], [h2(n, n, 1) for n in range(1, 5)]))
    assert alone.outcome == "not-multiplexed"
