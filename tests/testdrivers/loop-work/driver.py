"""Test driver: the Python helper (drivers/python/_lib) with http.client, whose message loop burns
CPU at `go` in a function of its own (busy_in_the_message_loop) before it calls the driver's
run_all. The helper's loop outside run_all is no part of the timed phase: before `go` (waiting
for it, parsing it) and after `done` (the report, the client closed) a sampler stopped by the
lab's signal samples it by a race, here for certain, so a profile of the timed phase must hold
none of these samples."""

from __future__ import annotations

import http.client
import os
import sys
import time
from urllib.parse import urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "drivers", "python", "_lib"))

import labdriver  # noqa: E402

BUSY_S = 0.05   # CPU seconds burnt at each go: a dozen py-spy samples at its 250 Hz


def busy_in_the_message_loop() -> int:
    """Spin for BUSY_S of this process's CPU time."""
    end, n = time.process_time() + BUSY_S, 0
    while time.process_time() < end:
        n += 1
    return n


class LoopWork(labdriver.Driver):
    """One kept http.client connection a job; every request a plain GET."""

    def open(self, job: labdriver.Job) -> None:
        self.conn: http.client.HTTPConnection | None = None
        self.verify = job.verify

    def request(self, req: labdriver.Request) -> labdriver.Response:
        url = urlsplit(req.url)
        if self.conn is None:
            self.conn = http.client.HTTPConnection(url.hostname, url.port)
        self.conn.request(req.method, url.path or "/")
        resp = self.conn.getresponse()
        body = resp.read()
        return labdriver.Response.of(resp.status, resp.version, body, self.verify)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def on_go(loop: labdriver.Loop) -> None:
    busy_in_the_message_loop()
    helpers_on_go(loop)


helpers_on_go, labdriver.Loop.on_go = labdriver.Loop.on_go, on_go

if __name__ == "__main__":
    labdriver.main(LoopWork())
