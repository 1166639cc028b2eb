"""The happy-eyeballs case: a host name whose first address never answers (netlab/darkfirst.py).
Judged from the dark address's SYN count, the bench server's ledger and the lab's clock; run end
to end on the fake drivers careful (RFC 8305's next address after 250 ms), reference (each address
for the whole timeout, as socket.create_connection) and lenient (the first address for as long as
the kernel tries).

No timed assertion: careful's 200 comes within a few hundred ms, yet a busy host may push it past
the 2 s bound, so its test takes either judgement of a 200 after a SYN to the dark address; the
reference cannot be faster than its 5 s timeout on the dark address, so its SLOW is certain."""

from __future__ import annotations

import dataclasses

import pytest

from clientlab.behaviour import behave, cases as behaviour
from clientlab.behaviour.cases import Observed, judge
from clientlab.netlab import darkfirst, namespaces
from clientlab.output.behave import code
from tests.support.netlab import leftovers

CASES = {bc.name: bc for bc in behaviour.discover().found}
EYEBALLS = CASES["happy-eyeballs"]
EYEBALLS_V6 = CASES["happy-eyeballs-v6"]   # a dark IPv6 address, the answering IPv4 one
ANSWERED = [{"r": 0, "status": 200, "bytes": 6}]
AT_THE_SERVER = [{"origin": "a", "path": "/fault/landing", "method": "GET"}]
needs_namespaces = pytest.mark.skipif(namespaces.why_unavailable() is not None, reason=str(namespaces.why_unavailable()))


def judged(elapsed, responses=(), errors=(), ledger=(), syns=None):
    outcome = judge(EYEBALLS, Observed(elapsed, list(responses), list(errors), list(ledger), dark_syns=syns))
    return outcome.outcome, outcome.detail


def test_the_case_asks_origin_a_by_the_host_name_for_its_landing():
    job = EYEBALLS.job(darkfirst.HOST, 4711, {"fault_a": 4711})
    assert [r["url"] for r in job["requests"]] == [f"http://{darkfirst.HOST}:4711/fault/landing"]
    assert job["timeout_s"] == 5 and EYEBALLS.case.check == "next-address"


def test_the_second_address_answering_within_two_seconds_is_kept_with_its_time():
    outcome, detail = judged(0.263, ANSWERED, ledger=AT_THE_SERVER, syns=1)
    assert outcome == "ok" and "263 ms" in detail and "dark address: 1" in detail


def test_the_second_address_answering_late_is_slow_and_an_error_is_no_fallback():
    assert judged(5.02, ANSWERED, ledger=AT_THE_SERVER, syns=3)[0] == "slow-fallback"
    outcome, detail = judged(5.01, errors=[{"r": 0, "message": "timed out"}], syns=3)
    assert outcome == "no-fallback" and "timed out" in detail and "bench server: 0" in detail
    assert judged(None, syns=5)[0] == "no-fallback"


def test_a_client_that_never_tried_the_dark_address_shows_nothing():
    outcome, detail = judged(0.01, ANSWERED, ledger=AT_THE_SERVER, syns=0)
    assert outcome == "dark-untried" and "shows nothing" in detail


def test_the_matrix_shows_the_time_to_the_answer():
    def cell(outcome, elapsed):
        out = judge(EYEBALLS, Observed(elapsed, ANSWERED, [], AT_THE_SERVER, dark_syns=1))
        assert out.outcome == outcome
        return behave.BehaveCell("d", EYEBALLS.name, "ok", dataclasses.replace(out, elapsed_s=elapsed))

    assert code(cell("ok", 0.263), EYEBALLS) == "ok:263ms"
    assert code(cell("slow-fallback", 5.04), EYEBALLS) == "SLOW:5.0s"
    assert code(cell("slow-fallback", 12.5), EYEBALLS) == "SLOW:12s"


@needs_namespaces
@pytest.mark.xdist_group("netlab")   # the namespaces hold the network lab's claim
@pytest.mark.parametrize("case", [EYEBALLS, EYEBALLS_V6], ids=["two-ipv4", "dark-ipv6-first"])
def test_a_client_that_races_the_next_address_passes_one_that_waits_does_not(test_drivers, case):
    # two IPv4 addresses in the hosts file's order; or a dark IPv6 address that glibc's RFC 6724
    # sort puts before the IPv4 one the file lists first: the fake drivers connect in that order
    careful = behave.run_cell(test_drivers["python-fake-careful"], case, None)  # type: ignore[arg-type]
    reference = behave.run_cell(test_drivers["python-fake-reference"], case, None)  # type: ignore[arg-type]
    lenient = behave.run_cell(test_drivers["python-fake-lenient"], case, None)  # type: ignore[arg-type]
    assert careful.status == reference.status == lenient.status == "ok"
    # each tried the dark address first: a SYN reached it before the bench server answered
    for cell in (careful, reference, lenient):
        assert "SYNs to the dark address: 0" not in (cell.outcome.detail or ""), cell.outcome
    assert careful.outcome.outcome in ("ok", "slow-fallback"), careful.outcome
    assert reference.outcome.outcome == "slow-fallback", reference.outcome
    assert lenient.outcome.outcome == "no-fallback", lenient.outcome
    assert leftovers() == []


def test_the_v6_case_asks_the_same_landing_by_the_same_name():
    job = EYEBALLS_V6.job(darkfirst.HOST, 4711, {"fault_a": 4711})
    assert [r["url"] for r in job["requests"]] == [f"http://{darkfirst.HOST}:4711/fault/landing"]
    assert EYEBALLS_V6.case.check == "next-address" and EYEBALLS_V6.label != EYEBALLS.label


def test_without_namespaces_the_cell_says_why(test_drivers, monkeypatch):
    monkeypatch.setattr(namespaces, "why_unavailable", lambda: "the network lab needs root")
    cell = behave.run_cell(test_drivers["python-fake-careful"], EYEBALLS, None)  # type: ignore[arg-type]
    assert cell.status == "unsupported" and cell.outcome.outcome == "no-namespace"
    assert "needs root" in (cell.outcome.detail or "") and code(cell, EYEBALLS) == "nons"
