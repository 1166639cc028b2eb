"""Tests of the shared Python driver helper: job parsing, refusals, the message loop (no network)."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import sys

import labdriver
import pytest

def job_dict(**overrides) -> dict:
    job = {
        "scenario": "get-small", "verify": True, "http": "1.1", "tls_ca": None, "concurrency": 1,
        "keep_alive": True, "cookies": False, "accept_gzip": False, "timeout_s": 60,
        "options": {"tcp_nodelay": None, "max_host_connections": None},
        "requests": [{"method": "GET", "url": "http://127.0.0.1:1/bytes/4", "repeat": 3}],
    }
    job.update(overrides)
    return job


# --- job parsing -------------------------------------------------------------------------------

def test_job_parse_defaults_and_fields():
    job = labdriver.Job.parse(job_dict(requests=[
        {"method": "post", "url": "http://h/echo", "form": {"a": "1"}, "form_encoding": "multipart"},
        {"method": "GET", "url": "http://h/x", "sink": "file", "sink_path": "/tmp/s", "follow_redirects": True},
    ]))
    first, second = job.requests
    assert (first.r, first.method, first.repeat, first.multipart, first.has_body) == (0, "POST", 1, True, True)
    assert (second.r, second.to_file, second.follow_redirects, second.headers) == (1, True, True, {})
    assert job.timeout_s == 60.0 and job.option("tcp_nodelay") is None and job.option("absent") is None


def test_a_job_that_names_no_timeout_leaves_the_librarys_own():
    job = labdriver.Job.parse(job_dict(timeout_s=None))
    assert job.timeout_s is None
    assert "timeout" not in job.requests[0].requests_kwargs(job.timeout_s)
    assert labdriver.timeout_kwargs(2.5) == {"timeout": 2.5} and labdriver.timeout_kwargs(None) == {}


@pytest.mark.parametrize("entry,follow", [({}, None), ({"follow_redirects": None}, None),
                                          ({"follow_redirects": False}, False), ({"follow_redirects": True}, True)])
def test_follow_redirects_is_three_valued(entry, follow):
    req = labdriver.Request.parse(0, {"method": "GET", "url": "u", **entry})
    assert req.follow_redirects is follow
    assert req.redirect_kwargs("allow_redirects") == ({} if follow is None else {"allow_redirects": follow})


def test_work_expands_repeats_in_order():
    job = labdriver.Job.parse(job_dict(requests=[
        {"method": "GET", "url": "http://h/a", "repeat": 2}, {"method": "GET", "url": "http://h/b"}]))
    assert [r.r for r in job.work()] == [0, 0, 1]


def test_open_body(tmp_path):
    body = tmp_path / "b.bin"
    body.write_bytes(b"xyz")
    with labdriver.Request.parse(0, {"method": "POST", "url": "u", "body_file": str(body)}).open_body() as f:
        assert f.read() == b"xyz"
    assert f.closed
    with labdriver.Request.parse(0, {"method": "GET", "url": "u"}).open_body() as f:
        assert f is None


def test_upload_headers_default_content_type(tmp_path):
    body = tmp_path / "b.bin"
    body.write_bytes(b"x" * 10)
    req = labdriver.Request.parse(0, {"method": "PUT", "url": "http://h/echo", "body_file": str(body),
                                      "headers": {"X-A": "1"}})
    assert req.upload_headers() == {"X-A": "1", "Content-Type": "application/octet-stream"}
    assert req.body_size == 10


def test_requests_kwargs():
    form = labdriver.Request.parse(0, {"method": "POST", "url": "u", "form": {"a": "1"}, "follow_redirects": True})
    assert form.requests_kwargs(5.0) == {"headers": {}, "allow_redirects": True, "timeout": 5.0,
                                         "stream": False, "data": {"a": "1"}}
    sink = labdriver.Request.parse(0, {"method": "PUT", "url": "u", "body_file": "/b", "sink": "file"})
    body = io.BytesIO(b"x")
    kwargs = sink.requests_kwargs(1.0, body)
    assert kwargs["data"] is body and kwargs["stream"] is True
    assert "allow_redirects" not in kwargs  # absent: the library's default stays
    report_3xx = labdriver.Request.parse(0, {"method": "GET", "url": "u", "follow_redirects": False})
    assert report_3xx.requests_kwargs(1.0)["allow_redirects"] is False
    assert kwargs["headers"] == {"Content-Type": "application/octet-stream"}


def test_client_headers_and_close_refusal():
    plain = labdriver.Job.parse(job_dict())
    assert plain.client_headers == {"Accept-Encoding": "identity"} and plain.close_refusal("x") is None
    closing = labdriver.Job.parse(job_dict(keep_alive=False, accept_gzip=True))
    assert closing.client_headers == {"Accept-Encoding": "gzip", "Connection": "close"}
    assert closing.close_refusal("x") is None  # HTTP/1.1 closes with the header
    h2 = labdriver.Job.parse(job_dict(keep_alive=False, http="2"))
    assert "x cannot close HTTP/2" in h2.close_refusal("x")


def test_a_job_leaving_the_coding_to_the_library_sets_no_accept_encoding():
    left = labdriver.Job.parse(job_dict(options={"accept_encoding": "library"}))
    assert left.library_encoding and left.client_headers == {}
    assert not labdriver.Job.parse(job_dict()).library_encoding
    assert labdriver.refusal(left, {"accept_encoding": labdriver.LIBRARY_ENCODING}) is None
    assert labdriver.refusal(left, {}) == "option accept_encoding is not supported"
    wrong = labdriver.Job.parse(job_dict(options={"accept_encoding": "gzip"}))
    assert "only \"library\"" in labdriver.refusal(wrong, {"accept_encoding": labdriver.LIBRARY_ENCODING})
    h3 = labdriver.Job.parse(job_dict(keep_alive=False, http="3"))
    assert "x cannot close HTTP/3" in h3.close_refusal("x")


@pytest.mark.parametrize("value,label", [(11, "1.1"), (10, "1.0"), (20, "2"), ("HTTP/1.1", "1.1"),
                                         ("HTTP/2", "2"), ("HTTP/2.0", "2"), ((1, 1), "1.1"), ((2, 0), "2"),
                                         (30, "3"), ("HTTP/3", "3"), ("HTTP/3.0", "3")])
def test_http_label(value, label):
    assert labdriver.http_label(value) == label


# --- refusals ----------------------------------------------------------------------------------

def refuse(honoured=None, **overrides):
    return labdriver.refusal(labdriver.Job.parse(job_dict(**overrides)), honoured or {})


def test_null_options_are_fine():
    assert refuse(options={"tcp_nodelay": None, "share": None, "whatever": None}) is None


def test_unknown_non_null_option_is_refused():
    assert "frobnicate" in refuse(options={"frobnicate": 1})


def test_known_option_not_honoured_is_refused():
    assert "tcp_nodelay" in refuse(options={"tcp_nodelay": True})
    assert refuse(honoured={"tcp_nodelay": None}, options={"tcp_nodelay": True}) is None


def test_option_value_not_honoured_is_refused():
    honoured = {"tcp_nodelay": (True,)}
    assert refuse(honoured=honoured, options={"tcp_nodelay": True}) is None
    assert refuse(honoured=honoured, options={"tcp_nodelay": False}) == (
        "option tcp_nodelay=false cannot be honoured (only true)")


def test_option_of_wrong_type_is_refused():
    assert "must be a int" in refuse(honoured={"max_host_connections": None}, options={"max_host_connections": True})
    assert "must be a bool" in refuse(honoured={"tcp_nodelay": None}, options={"tcp_nodelay": 1})


def test_capabilities_are_the_labs_business():
    # the lab never sends a job needing a capability the manifest lacks: the helper checks none
    assert refuse(http="h2c", concurrency=2, cookies=True, accept_gzip=True, keep_alive=False) is None


def test_refuse_all_cookie_policy():
    policy = labdriver.refuse_cookies()
    assert not policy.set_ok(None, None) and not policy.return_ok(None, None)


# --- bodies ------------------------------------------------------------------------------------

def test_response_of_hashes_only_when_verifying():
    assert labdriver.Response.of(200, 11, b"abc", True).sha256 == hashlib.sha256(b"abc").hexdigest()
    assert labdriver.Response.of(200, 11, b"abc", False) == labdriver.Response(200, 3, "1.1", None)


def test_rows_kept_by_a_drivers_own_loop_are_reported_in_order_with_added_responses_labelled_after():
    req0, req1 = labdriver.Request(0, "GET", "http://h/a"), labdriver.Request(1, "GET", "http://h/b")
    labelled = []

    def label(version):
        labelled.append(version)
        return {2: "1.1"}[version]

    report = labdriver.Report(verify=True)
    report.add(req0, labdriver.Response(200, 3, "1.1", "d0"))
    rows = report.rows(req1, label)
    report.add(req0, labdriver.Response(404, 0, "1.1", "d2"))
    rows.append((200, 5, 2, "d1"))
    rows.append((201, 6, 2, "d1b"))
    assert labelled == []  # the label is read only when the report is built
    assert report.responses == [
        {"r": 0, "status": 200, "bytes": 3, "http": "1.1", "sha256": "d0"},
        {"r": 1, "status": 200, "bytes": 5, "http": "1.1", "sha256": "d1"},
        {"r": 1, "status": 201, "bytes": 6, "http": "1.1", "sha256": "d1b"},
        {"r": 0, "status": 404, "bytes": 0, "http": "1.1", "sha256": "d2"}]
    quiet = labdriver.Report(verify=False)
    quiet.rows(req1).append((200, 5, 11))  # the helper's own labels by default
    assert quiet.responses == [{"r": 1, "status": 200, "bytes": 5, "http": "1.1"}]


def test_a_tally_counts_the_rows_of_a_drivers_own_loop_as_responses():
    tally = labdriver.Tally()
    req = labdriver.Request(0, "GET", "http://h/a")
    tally.add(req, labdriver.Response(200, 3, "1.1"))
    rows = tally.rows(req)
    rows.extend([(200, 3, 11)] * 4)
    assert tally.responses == 5


def test_file_sink(tmp_path):
    path = tmp_path / "sink"
    with labdriver.FileSink(str(path), verify=True) as sink:
        resp = sink.drain([b"ab", b"", b"c"], 200, "HTTP/1.1")
    assert path.read_bytes() == b"abc"
    assert resp == labdriver.Response(200, 3, "1.1", hashlib.sha256(b"abc").hexdigest())
    assert labdriver.sha256_file(str(path)) == resp.sha256


class FakeRequestsResponse:
    """The parts of a requests/niquests Response that requests_response reads."""

    status_code, content, closed = 200, b"abcd", False
    raw = type("Raw", (), {"version": 11})()

    def iter_content(self, size):
        return iter([self.content[:1], self.content[1:]])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.closed = True


def test_requests_response_memory_and_file(tmp_path):
    memory = labdriver.Request.parse(0, {"method": "GET", "url": "u"})
    assert labdriver.requests_response(FakeRequestsResponse(), memory, False) == labdriver.Response(200, 4, "1.1")
    path = tmp_path / "sink"
    to_file = labdriver.Request.parse(0, {"method": "GET", "url": "u", "sink": "file", "sink_path": str(path)})
    resp = FakeRequestsResponse()
    got = labdriver.requests_response(resp, to_file, True)
    assert path.read_bytes() == b"abcd" and resp.closed
    assert got == labdriver.Response(200, 4, "1.1", hashlib.sha256(b"abcd").hexdigest())


# --- the message loop --------------------------------------------------------------------------

class FakeDriver(labdriver.Driver):
    """Answers every request with its URL as the body; a URL with 'fail' raises."""

    options = {"tcp_nodelay": None}

    def __init__(self):
        self.events: list[str] = []

    def versions(self):
        return {"python": "x", "fake": "1"}

    def refuse(self, job):
        return "no h2 here" if job.http != "1.1" else None

    def open(self, job):
        self.verify = job.verify
        self.events.append("open")

    def request(self, req):
        if "fail" in req.url:
            raise ConnectionRefusedError("refused")
        return labdriver.Response.of(200, 11, req.url.encode(), self.verify)

    def close(self):
        self.events.append("close")


class FakeAsyncDriver(labdriver.AsyncDriver):
    """The same, asynchronously."""

    async def open(self, job):
        self.verify = job.verify

    async def request(self, req):
        return labdriver.Response.of(200, (1, 1), req.url.encode(), self.verify)


def converse(driver, messages) -> list[dict]:
    inp = io.BytesIO("".join(json.dumps(m) + "\n" for m in messages).encode())
    out = io.StringIO()
    labdriver.Loop(driver, inp, out).run()
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_full_conversation():
    driver = FakeDriver()
    replies = converse(driver, [
        {"type": "hello", "protocol": 1},
        {"type": "job", "job": job_dict(requests=[
            {"method": "GET", "url": "http://h/a", "repeat": 2}, {"method": "GET", "url": "http://fail/"}])},
        {"type": "go"},
    ])
    assert [r["type"] for r in replies] == ["hello", "ready", "done", "report"]
    assert replies[0] == {"type": "hello", "protocol": 1, "versions": {"python": "x", "fake": "1"}}
    report = replies[3]
    digest = hashlib.sha256(b"http://h/a").hexdigest()
    assert report["responses"] == [{"r": 0, "status": 200, "bytes": 10, "http": "1.1", "sha256": digest}] * 2
    assert report["errors"] == [{"r": 1, "message": "ConnectionRefusedError: refused"}]
    assert driver.events == ["open", "close"]  # closed after the report


def test_no_sha256_without_verify():
    replies = converse(FakeDriver(), [{"type": "job", "job": job_dict(verify=False)}, {"type": "go"}])
    assert all("sha256" not in r for r in replies[-1]["responses"])


def test_unsupported_then_next_job():
    driver = FakeDriver()
    replies = converse(driver, [
        {"type": "job", "job": job_dict(options={"frobnicate": True})},
        {"type": "job", "job": job_dict(http="2")},
        {"type": "job", "job": job_dict()},
        {"type": "go"},
    ])
    assert replies[0] == {"type": "unsupported", "reason": "option frobnicate is not supported"}
    assert replies[1] == {"type": "unsupported", "reason": "no h2 here"}
    assert [r["type"] for r in replies[2:]] == ["ready", "done", "report"]
    assert driver.events == ["open", "close"]  # refused jobs never build a client


def test_open_failure_is_an_error():
    class Broken(FakeDriver):
        def open(self, job):
            raise OSError("no CA file")

    replies = converse(Broken(), [{"type": "job", "job": job_dict()}, {"type": "go"}])
    assert replies[0]["type"] == "error" and "no CA file" in replies[0]["message"]
    assert replies[1] == {"type": "error", "message": "go without a ready job"}


def test_unknown_message_and_garbage():
    replies = converse(FakeDriver(), [{"type": "dance"}])
    assert replies == [{"type": "error", "message": "unknown message type 'dance'"}]
    out = io.StringIO()
    labdriver.Loop(FakeDriver(), io.BytesIO(b"not json\n\n"), out).run()
    assert json.loads(out.getvalue())["type"] == "error"


def test_async_driver_runs_in_parallel_order_free():
    driver = FakeAsyncDriver()
    try:
        replies = converse(driver, [
            {"type": "job", "job": job_dict(concurrency=4, requests=[
                {"method": "GET", "url": f"http://h/feeds/{i}"} for i in range(10)])},
            {"type": "go"},
        ])
    finally:
        driver.loop.close()
    assert [r["type"] for r in replies] == ["ready", "done", "report"]
    assert sorted(r["r"] for r in replies[2]["responses"]) == list(range(10))
    assert {r["http"] for r in replies[2]["responses"]} == {"1.1"}


class FakeHybridDriver(labdriver.HybridDriver):
    """A sync client for sequential jobs, an asyncio one for parallel jobs; says which ran."""

    def __init__(self):
        super().__init__()
        self.events: list[str] = []

    def open(self, job):
        self.verify = job.verify
        if self.parallel(job):
            return self._aopen()
        self.events.append("open")
        return None

    async def _aopen(self):
        asyncio.get_running_loop()  # built inside the driver's loop
        self.events.append("aopen")

    def request(self, req):
        return labdriver.Response.of(200, 11, b"sync", self.verify)

    async def arequest(self, req):
        await asyncio.sleep(0)
        return labdriver.Response.of(200, 11, b"async", self.verify)

    def close(self):
        if self.events[-1] == "aopen":
            return self._aclose()
        self.events.append("close")
        return None

    async def _aclose(self):
        self.events.append("aclose")


def test_hybrid_driver_takes_its_async_client_for_parallel_jobs_only():
    driver = FakeHybridDriver()
    try:
        replies = converse(driver, [
            {"type": "job", "job": job_dict()}, {"type": "go"},
            {"type": "job", "job": job_dict(concurrency=3, requests=[
                {"method": "GET", "url": "http://h/a", "repeat": 7}])}, {"type": "go"},
        ])
    finally:
        driver.loop.close()
    sequential, parallel = replies[2]["responses"], replies[5]["responses"]
    assert {r["bytes"] for r in sequential} == {4} and len(sequential) == 3
    assert {r["bytes"] for r in parallel} == {5} and len(parallel) == 7
    assert driver.events == ["open", "close", "aopen", "aclose"]


def test_main_reads_no_manifest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no driver.toml anywhere near: capabilities are the lab's
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(
        (json.dumps({"type": "job", "job": job_dict(cookies=True)}) + "\n").encode())))
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    labdriver.main(FakeDriver())
    assert json.loads(out.getvalue()) == {"type": "ready"}


# --- the calibration loop (bare) ---------------------------------------------------------------

def test_bare_rounds_reuse_the_client_built_by_the_first_and_count_every_outcome():
    driver = FakeDriver()
    work = [{"method": "GET", "url": "http://h/a", "repeat": 3}, {"method": "GET", "url": "http://fail/"}]
    replies = converse(driver, [{"type": "bare", "job": job_dict(verify=False, requests=work)}] * 2)
    assert [r["type"] for r in replies] == ["bare", "bare"]
    for r in replies:
        assert (r["requests"], r["errors"], r["error"]) == (3, 1, "ConnectionRefusedError: refused")
        assert r["wall_s"] > 0
    assert driver.events == ["open", "close"]  # one client for both rounds, closed at end of input


def test_a_job_after_bare_rounds_closes_the_bare_client_first():
    driver = FakeDriver()
    replies = converse(driver, [{"type": "bare", "job": job_dict(verify=False)},
                                {"type": "job", "job": job_dict()}, {"type": "go"}])
    assert [r["type"] for r in replies] == ["bare", "ready", "done", "report"]
    assert "error" not in replies[0]
    assert driver.events == ["open", "close", "open", "close"]


@pytest.mark.parametrize("then", [[{"type": "job", "job": job_dict()}, {"type": "go"}],
                                  [{"type": "bare", "job": job_dict(verify=False)}], []])
def test_a_client_readied_for_a_job_that_never_got_go_is_closed_by_whatever_comes_next(then):
    driver = FakeDriver()
    replies = converse(driver, [{"type": "job", "job": job_dict()}, *then])
    assert replies[0]["type"] == "ready" and "error" not in [r["type"] for r in replies]
    assert driver.events == ["open", "close"] * (2 if then else 1)


def test_the_first_bare_round_is_refused_as_a_job_would_be_and_builds_no_client():
    driver = FakeDriver()
    replies = converse(driver, [{"type": "bare", "job": job_dict(http="2")},
                                {"type": "bare", "job": job_dict(options={"share": ["dns"]})}])
    assert [(r["type"], r["reason"]) for r in replies] == [
        ("unsupported", "no h2 here"), ("unsupported", "option share is not supported")]
    assert driver.events == []


def test_async_bare_rounds_keep_every_request_in_flight_counted():
    replies = converse(FakeAsyncDriver(), [{"type": "bare", "job": job_dict(verify=False, concurrency=3, requests=[
        {"method": "GET", "url": "http://h/a", "repeat": 7}])}])
    assert (replies[0]["type"], replies[0]["requests"], replies[0]["errors"]) == ("bare", 7, 0)


def test_leave_import_path_drops_the_lab_folders_and_keeps_the_rest(monkeypatch):
    lib = os.path.dirname(os.path.abspath(labdriver.__file__))
    other = os.path.join(lib, "..", "elsewhere")
    monkeypatch.setattr(sys, "path", [os.path.join(lib, "..", "_lib"), "/kept", other, lib])
    labdriver.leave_import_path()
    assert sys.path == ["/kept", other]
    labdriver.leave_import_path(other)
    assert sys.path == ["/kept"]


def test_request_is_a_plain_get_only_without_anything_asked_beyond_the_url():
    url = "http://127.0.0.1:1/bytes/10"
    assert labdriver.Request.parse(0, {"method": "get", "url": url, "repeat": 3}).plain_get
    for extra in ({"headers": {"X-A": "1"}}, {"follow_redirects": False}, {"method": "POST"},
                  {"form": {"a": "b"}}, {"body_file": "/dev/null"}, {"sink": "file", "sink_path": "/tmp/x"}):
        assert not labdriver.Request.parse(0, {"method": "GET", "url": url, **extra}).plain_get, extra


def test_line_writer_writes_the_rest_of_a_line_after_short_writes(monkeypatch):
    # a write that a signal or a profiler's ptrace stop interrupts on a full pipe returns short
    read_end, write_end = os.pipe()
    real_write = os.write
    calls = []

    def short_write(fd, data):
        calls.append(len(data))
        return real_write(fd, bytes(data[:1000]))

    monkeypatch.setattr(os, "write", short_write)
    line = json.dumps({"type": "report", "responses": [{"r": 0, "status": 200, "bytes": 1024}] * 100}) + "\n"
    try:
        labdriver.LineWriter(write_end).write(line)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as got:
            assert got.read().decode() == line
    finally:
        monkeypatch.undo()
    assert len(calls) > 1
