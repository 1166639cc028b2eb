"""Test plain loops (docs/driver-protocol.md §9) on http.client: `honest`, and loops that lie
about their work or fail, for crosscheck --plain's checks.

    plain.py BEHAVIOUR URL COUNT MODE WARMUP_S
"""

from __future__ import annotations

import http.client
import json
import sys
import time
from urllib.parse import urlsplit


def main() -> int:
    behaviour, url, count, mode, warmup_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    if behaviour == "crash":
        print("plain loop: crashed on purpose", file=sys.stderr)
        return 3
    parts = urlsplit(url)
    path = parts.path or "/"
    conn = http.client.HTTPConnection(parts.hostname, parts.port)

    def get() -> int:
        nonlocal conn
        if mode == "close":
            conn.close()
            conn = http.client.HTTPConnection(parts.hostname, parts.port)
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise SystemExit(f"plain loop: status {resp.status}")
        return len(body)

    until = time.monotonic() + warmup_s
    while time.monotonic() < until:
        get()
    done = count - 1 if behaviour == "short" and count else count
    start = time.monotonic()
    read = sum(get() for _ in range(done))
    seconds = time.monotonic() - start
    if behaviour == "liar":
        read *= 2
    print(json.dumps({"requests": count, "bytes": read, "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
