"""Debian's nginx as the lab runs it: its access log read whole at the end of a trial."""

from __future__ import annotations

import http.client

import pytest

from clientlab.servers import nginx


def test_the_log_is_complete_when_read_long_before_nginx_would_flush_it(bench_server):
    if reason := nginx.available():
        pytest.fail(f"nginx is part of the lab: {reason}")
    # nginx's own timer would write its buffered log an hour from now: reading it must not wait for that
    with nginx.StaticServer(bench_server, ["/bytes/12"], log_flush_s=3600) as static:
        for trial in range(3):
            static.reset()
            conn = http.client.HTTPConnection(static.endpoint.host, static.endpoint.http_port, timeout=10)
            for _ in range(20 + trial):
                conn.request("GET", "/bytes/12")
                assert conn.getresponse().read() and True
            conn.close()
            snapshot = static.counters()
            assert snapshot["requests"] == 20 + trial and snapshot["log"][-1]["resp_body_bytes"] == 12
