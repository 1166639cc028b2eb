"""The behaviour matrix's TLS and coding cases: certificates a client must refuse (expired, wrong
name, untrusted chain, self-signed), a stalled TLS handshake, a brotli bomb, a truncated gzip and
HTTP/2's MAX_CONCURRENT_STREAMS lowered with streams in flight; judged from the ledger, and each
fault against a fake driver that passes it and one that fails it. No timed assertion (see
behave_test.py)."""

from __future__ import annotations

import http.client
import ssl

import pytest

from clientlab.behaviour import behave, cases as behaviour
from clientlab.behaviour.cases import Observed, judge
from clientlab.drivers import build
from clientlab.errors import LabInputError
from clientlab.output.behave import code

CASES = {bc.name: bc for bc in behaviour.discover().found}
CERTIFICATES = ("tls-expired", "tls-wrong-name", "tls-untrusted", "tls-self-signed")
PORTS = {"fault_a": 4321, "fault_h2": 4600, "fault_expired": 4701, "fault_wrong-name": 4702, "fault_untrusted": 4703,
         "fault_self-signed": 4704, "fault_tls-stall": 4705}


def test_each_tls_case_asks_its_own_origin_over_https_trusting_the_labs_ca():
    for name, port in [("tls-expired", 4701), ("tls-wrong-name", 4702), ("tls-untrusted", 4703),
                       ("tls-self-signed", 4704), ("tls-stall", 4705)]:
        job = CASES[name].job("127.0.0.1", 4321, PORTS, "/lab/ca.pem")
        assert [r["url"] for r in job["requests"]] == [f"https://127.0.0.1:{port}/fault/landing"], name
        assert job["tls_ca"] == "/lab/ca.pem" and CASES[name].capabilities() == ["http1", "tls"]
    with pytest.raises(Exception, match="fault_expired"):
        CASES["tls-expired"].job("127.0.0.1", 4321, {"fault_a": 4321})


def test_the_lowered_limit_asks_for_eight_streams_four_at_a_time_and_the_codings_for_a_decoded_body():
    job = CASES["h2-max-streams"].job("127.0.0.1", 4321, PORTS, "/lab/ca.pem")
    assert job["http"] == "2" and job["concurrency"] == 4 and len(job["requests"]) == 8
    assert job["requests"][7]["url"] == "https://127.0.0.1:4600/fault/h2-max-streams?n=8"
    truncated = CASES["gzip-truncated"].job("127.0.0.1", 4321)
    assert truncated["accept_gzip"] is True and "accept_encoding" not in truncated["options"]
    assert "gzip" in CASES["gzip-truncated"].capabilities()


def test_the_brotli_bomb_leaves_accept_encoding_to_the_library_over_https():
    job = CASES["br-bomb"].job("127.0.0.1", 4321, {**PORTS, "fault_s": 4800}, "/lab/ca.pem")
    assert job["accept_gzip"] is False and job["options"]["accept_encoding"] == "library"
    assert [r["url"] for r in job["requests"]] == ["https://127.0.0.1:4800/fault/br-bomb?mib=1024"]
    assert job["tls_ca"] == "/lab/ca.pem" and "gzip" not in CASES["br-bomb"].capabilities()
    for name in ("gzip-bomb", "gzip-bomb-nested", "gzip-truncated"):  # the job asks for gzip there
        assert CASES[name].encoding == "gzip" and "accept_encoding" not in CASES[name].job("127.0.0.1", 4321)["options"]


def test_accept_encoding_is_refused_on_a_case_whose_answer_is_not_content_coded(tmp_path):
    path = tmp_path / "coded.toml"
    path.write_text('description = "x"\nfault = "short-body"\ntimeout_s = 1\ncheck = "truncation"\n'
                    'accept_encoding = "library"\n')
    with pytest.raises(LabInputError, match="accept_encoding goes with a content-coded fault"):
        behaviour.load_case(path)


@pytest.mark.parametrize("text, complaint", [
    ('description = "x"\nfault = "short-body"\ntimeout_s = 1\ncheck = "certificate"\n', 'goes with fault = "tls-expired" or'),
    ('description = "x"\nfault = "tls-expired"\ntimeout_s = 1\ncheck = "truncation"\n', 'check = "certificate" goes with'),
    ('description = "x"\nfault = "tls-stall"\ntimeout_s = 1\ncheck = "truncation"\n', 'is judged by check = "deadline"'),
])
def test_a_tls_case_that_does_not_fit_its_check_is_refused(tmp_path, text, complaint):
    path = tmp_path / "bad-tls.toml"
    path.write_text(text)
    with pytest.raises(LabInputError, match=complaint):
        behaviour.load_case(path)


# -- judging ------------------------------------------------------------------------------------

def handshake(tls: str, conn: int = 1) -> dict:
    return {"origin": "expired", "path": "", "tls": tls, "conn": conn, "seq": 0}


def test_a_certificate_refused_in_the_handshake_is_correct_and_one_taken_is_a_finding():
    expired = CASES["tls-expired"]
    refused = judge(expired, Observed(0.05, [], [{"r": 0, "message": "SSLCertVerificationError: certificate has expired"}],
                                      [handshake("remote error: tls: expired certificate")]))
    assert refused.outcome == "ok" and "the server saw: remote error: tls: expired certificate" in refused.detail
    taken = judge(expired, Observed(0.05, [{"r": 0, "status": 200, "bytes": 7}], [],
                                    [handshake("ok"), {"origin": "expired", "path": "/fault/landing", "conn": 1, "seq": 1}]))
    assert taken.outcome == "cert-accepted" and "took the expired certificate" in taken.detail
    assert code(behave.BehaveCell("d", expired.name, "ok", taken), expired) == "ACCEPTED"


def test_a_certificate_refused_after_the_handshake_is_correct_and_an_unclear_error_is_said():
    name = CASES["tls-wrong-name"]
    after = judge(name, Observed(0.05, [], [{"r": 0, "message": "hostname mismatch"}], [handshake("ok")]))
    assert after.outcome == "ok" and "completed, then no request" in after.detail
    vague = judge(name, Observed(0.05, [], [{"r": 0, "message": "Connection reset by peer"}],
                                 [handshake("the client closed the connection in the handshake (EOF)")]))
    assert vague.outcome == "ok" and "does not name the certificate" in vague.detail
    nothing = judge(name, Observed(0.05, [], [{"r": 0, "message": "connection refused"}], []))
    assert nothing.outcome == "not-sent"
    assert judge(name, Observed(None, [], [], [handshake("ok")])).outcome == "hung"


def test_a_lowered_limit_is_judged_by_what_each_request_got_and_the_streams_refused_over_it():
    lowered = CASES["h2-max-streams"]  # 8 requests

    def h2(n: int, conn: int, seq: int, refused: bool = False) -> dict:
        return {"origin": "h2", "path": "/fault/h2-max-streams", "n": str(n), "conn": conn, "seq": seq, "refused": refused}
    kept = [h2(n, 1, n) for n in range(1, 5)] + [h2(n, 2 + n, 1) for n in range(5, 9)]
    answered = [{"r": r, "status": 200, "bytes": 7} for r in range(8)]
    assert judge(lowered, Observed(0.5, answered, [], kept)).outcome == "ok"
    over = judge(lowered, Observed(0.5, answered, [], kept + [h2(5, 1, 5, refused=True)]))
    assert over.outcome == "exceeded" and "1 opened over the lowered limit and refused" in over.detail
    assert code(behave.BehaveCell("d", lowered.name, "ok", over), lowered) == "EXCEEDED"
    lost = judge(lowered, Observed(0.5, answered[:6], [{"r": 6, "message": "REFUSED_STREAM"}] * 2,
                                   kept + [h2(7, 1, 5, refused=True)]))
    assert lost.outcome == "lost" and lost.detail.startswith("2 of 8")
    twice = judge(lowered, Observed(0.5, answered, [], kept + [h2(3, 9, 1)]))
    assert twice.outcome == "duplicated" and "n=3 2×" in twice.detail
    alone = judge(lowered, Observed(0.5, answered, [], [h2(n, n, 1) for n in range(1, 9)]))
    assert alone.outcome == "not-multiplexed"


def test_a_brotli_bomb_not_asked_for_shows_nothing_and_never_passes():
    br = CASES["br-bomb"]
    gzip_only = {"origin": "a", "path": "/fault/br-bomb", "accept_encoding": "gzip"}
    not_asked = judge(br, Observed(0.01, [{"r": 0, "status": 406, "bytes": 80}], [], [gzip_only], 20 << 20))
    assert not_asked.outcome == "not-asked" and "(gzip)" in not_asked.detail
    assert code(behave.BehaveCell("d", br.name, "ok", not_asked), br) == "NOTASKED"
    asked = {**gzip_only, "accept_encoding": "gzip, deflate, br"}
    held = judge(br, Observed(None, [], [], [asked], 512 << 20, capped=True))
    assert held.outcome == "held-all" and held.detail.endswith("Accept-Encoding as sent: gzip, deflate, br")
    assert judge(br, Observed(1.0, [{"r": 0, "status": 200, "bytes": 1 << 30}], [], [asked], 300 << 20)).outcome == "inflated"
    assert judge(br, Observed(1.0, [], [{"r": 0, "message": "decoded body too large"}], [asked], 30 << 20)).outcome == "ok"


def test_accept_encoding_is_read_as_the_server_reads_it():
    assert behaviour.asks_for("gzip, deflate, br", "br") and behaviour.asks_for("*", "br")
    assert behaviour.asks_for("BR;q=0.5", "br")
    assert not behaviour.asks_for("gzip", "br") and not behaviour.asks_for("br;q=0", "br")
    assert not behaviour.asks_for("", "br") and not behaviour.asks_for("brotli", "br")


# -- against the real bench server ------------------------------------------------------------------

def test_the_ledger_shows_a_handshake_and_a_request_after_it_only_for_a_client_that_took_the_certificate(bench_server):
    port = bench_server.info["fault_self-signed"]
    bench_server.faults(reset=True)
    trusting = ssl.create_default_context(cafile=str(bench_server.endpoint.ca_file))
    with pytest.raises(ssl.SSLCertVerificationError):
        http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=trusting).request("GET", "/fault/landing")
    anything = ssl._create_unverified_context()  # noqa: S323 - a client that takes any certificate, on purpose
    taken = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=anything)
    taken.request("GET", "/fault/landing?n=2")
    assert taken.getresponse().read() == b"landed\n"
    taken.close()
    entries = sorted(bench_server.faults(reset=True)["entries"], key=lambda e: (e["conn"], e["seq"]))
    assert [(e["origin"], e["path"], e.get("n"), e.get("tls") == "ok") for e in entries] == [
        ("self-signed", "", None, False), ("self-signed", "", None, True), ("self-signed", "/fault/landing", "2", False)]


# each fault against a fake driver that passes it and one that fails it
@pytest.mark.parametrize("case, passes, fails, failure", [
    ("tls-expired", "python-fake-careful", "python-fake-lenient", "cert-accepted"),
    ("tls-wrong-name", "python-fake-careful", "python-fake-lenient", "cert-accepted"),
    ("tls-untrusted", "python-fake-careful", "python-fake-lenient", "cert-accepted"),
    ("tls-self-signed", "python-fake-careful", "python-fake-lenient", "cert-accepted"),
    ("tls-stall", "python-fake-careful", "python-fake-lenient", "no-deadline"),
    ("gzip-truncated", "python-fake-careful", "python-fake-lenient", "accepted-short"),
])
def test_each_tls_and_coding_fault_tells_a_client_that_handles_it_from_one_that_does_not(
        bench_server, test_drivers, case, passes, fails, failure):
    good = behave.run_cell(test_drivers[passes], CASES[case], bench_server)
    bad = behave.run_cell(test_drivers[fails], CASES[case], bench_server)
    assert good.status == bad.status == "ok"
    assert good.outcome.outcome in (("ok", "late") if CASES[case].case.check == "deadline" else ("ok",)), good.outcome
    assert bad.outcome.outcome == failure, bad.outcome


def test_a_client_that_does_not_ask_for_br_gets_no_bomb_and_its_cell_says_so(bench_server, test_drivers):
    # left to the library (accept_encoding = "library"), http.client asks for identity alone
    for driver in ("python-fake-careful", "python-fake-lenient"):
        cell = behave.run_cell(test_drivers[driver], CASES["br-bomb"], bench_server)
        if cell.status == "unsupported" and cell.outcome.outcome == "no-cap":
            pytest.skip(cell.outcome.detail)
        assert cell.outcome.outcome == "not-asked", cell.outcome


def test_a_brotli_bomb_tells_a_client_that_keeps_a_limit_from_one_that_decodes_it_all(bench_server, test_drivers):
    # http.client cannot decode br: these two are Go's net/http with andybalholm/brotli, asking for br
    for name in ("go-fake-br-careful", "go-fake-br-lenient"):
        if not build.is_built(test_drivers[name]):
            ok, log = build.build(test_drivers[name])
            assert ok, f"{name} did not build: {log[-500:]}"
    careful = behave.run_cell(test_drivers["go-fake-br-careful"], CASES["br-bomb"], bench_server)
    if careful.outcome.outcome == "no-cap":
        pytest.skip(careful.outcome.detail)
    assert careful.outcome.outcome == "ok" and "careful's limit" in careful.outcome.detail, careful.outcome
    lenient = behave.run_cell(test_drivers["go-fake-br-lenient"], CASES["br-bomb"], bench_server)
    assert lenient.outcome.outcome == "held-all", lenient.outcome
