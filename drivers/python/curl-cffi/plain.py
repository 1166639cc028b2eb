"""curl_cffi in a plain loop, as its README keeps a connection: one requests.Session, s.get(url),
the body in `content`; no impersonation (a plain client). The library's plain loop of
docs/driver-protocol.md §9:
    plain.py URL COUNT MODE WARMUP_S [CA]
With CA (a run over HTTP/3: URL names the bench server's UDP port) the Session asks libcurl for
HTTP/3 only (http_version V3ONLY) and trusts CA.
"""

import json
import sys
import time

from curl_cffi import CurlHttpVersion, CurlOpt, requests

url, count, mode, warmup_s = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
ca = sys.argv[5] if len(sys.argv) > 5 else None
if mode not in ("keep-alive", "close"):
    sys.exit(f"plain.py: MODE must be keep-alive or close, not {mode!r}")

kwargs: dict = {}
if ca:
    kwargs.update(http_version=CurlHttpVersion.V3ONLY, verify=ca)
if mode == "close":
    # libcurl's way to close the connection after each transfer (the driver's for keep_alive false)
    kwargs["curl_options"] = {CurlOpt.FORBID_REUSE: 1}
session = requests.Session(**kwargs)


def get() -> int:
    try:
        resp = session.get(url)
    except requests.RequestsError as exc:
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
