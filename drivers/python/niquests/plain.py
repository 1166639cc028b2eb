"""niquests in a plain loop, as its docs keep a connection: one Session, session.get(url), the
body in `content`. The library's plain loop of docs/driver-protocol.md §9:
    plain.py URL COUNT MODE WARMUP_S [CA]
With CA (a run over HTTP/3: URL names the bench server's UDP port) the Session speaks HTTP/3
only, HTTP/1.1 and HTTP/2 disabled as niquests documents it, and trusts CA.
"""

import json
import sys
import time

import niquests

url, count, mode, warmup_s = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
ca = sys.argv[5] if len(sys.argv) > 5 else None
if mode not in ("keep-alive", "close"):
    sys.exit(f"plain.py: MODE must be keep-alive or close, not {mode!r}")
if mode == "close" and ca:
    sys.exit("plain.py: niquests cannot close HTTP/3 connections per request (Connection: close is HTTP/1.1)")

session = niquests.Session(disable_http1=True, disable_http2=True) if ca else niquests.Session()
if ca:
    session.verify = ca
if mode == "close":
    session.headers["Connection"] = "close"  # HTTP/1.1's way (the driver's for keep_alive false)


def get() -> int:
    try:
        resp = session.get(url)
    except niquests.RequestException as exc:
        sys.exit(f"plain.py: GET {url} failed: {exc}")
    if resp.status_code != 200:
        sys.exit(f"plain.py: GET {url} answered {resp.status_code}")
    return len(resp.content)


end = time.monotonic() + warmup_s
while time.monotonic() < end:
    get()
total = 0
t0 = time.perf_counter()
for _ in range(count):
    total += get()
seconds = time.perf_counter() - t0
session.close()
print(json.dumps({"requests": count, "bytes": total, "seconds": seconds}))
