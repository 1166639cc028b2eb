"""How a server writes an answer: the bench server's choice, checked with strace on the real server."""

from __future__ import annotations

import pytest

from clientlab.servers import nginx, writes

JSON_335K = "/json/335114"
# the bench server's head for this answer (nginx's shape: the 250 bytes nginx sends for this file),
# then the document
HEAD_AND_BODY = 250 + 335_114


def test_the_bench_server_writes_a_large_answer_whole_in_one_writev(bench_server):
    pattern = writes.probe([bench_server.proc.pid], bench_server.endpoint.host, bench_server.endpoint.http_port,
                           JSON_335K, answers=5)
    assert pattern.kinds == ("writev",)
    assert pattern.calls_per_answer == 1.0
    assert pattern.bytes_per_call == HEAD_AND_BODY


def test_nginx_as_the_lab_configures_it_writes_an_answer_in_one_call_too(bench_server):
    if reason := nginx.available():
        pytest.fail(f"nginx is part of the lab: {reason}")
    with nginx.StaticServer(bench_server, [JSON_335K]) as static:
        pattern = writes.probe(static.nginx.pids(), static.endpoint.host, static.endpoint.http_port, JSON_335K,
                               answers=5)
    assert pattern.calls_per_answer == 1.0
    assert pattern.bytes_per_call == HEAD_AND_BODY  # head and body in one call, the head as long as the bench server's


def test_only_the_probed_connections_send_calls_count_and_a_call_that_would_block_is_one():
    lines = [
        'writev(9<TCP:[127.0.0.1:8080->127.0.0.1:51234]>, [{iov_base="HTTP/1.1 200 OK"..., iov_len=112}], 2) = 65536',
        'writev(9<TCP:[127.0.0.1:8080->127.0.0.1:51234]>, [{iov_base="{"..., iov_len=269690}], 1) '
        '= -1 EAGAIN (Resource temporarily unavailable)',
        'write(9<TCP:[127.0.0.1:8080->127.0.0.1:51234]>, "..."..., 269690) = 269690',
        'writev(10<TCP:[127.0.0.1:8080->127.0.0.1:51299]>, [...], 2) = 335226',   # another client
        'write(6<anon_inode:[eventfd]>, "\\1\\0\\0\\0\\0\\0\\0\\0", 8) = 8',          # not a socket
        'write(4</var/log/access.log>, "GET /json"..., 90) = 90',
    ]
    calls = writes.parse(lines, 51234)
    assert calls == [("writev", 65536), ("writev", -1), ("write", 269690)]
    pattern = writes.WritePattern(1, tuple(calls))
    assert pattern.calls_per_answer == 3.0 and pattern.kinds == ("writev", "write")
    assert pattern.bytes_per_call == (65536 + 269690) / 2

