"""pycurl in a plain loop, as its quickstart writes a GET: one Curl handle, WRITEDATA into a
BytesIO, perform(). The library's plain loop of docs/driver-protocol.md §9:
    plain.py URL COUNT MODE WARMUP_S
"""

import json
import sys
import time
from io import BytesIO

import pycurl

url, count, mode, warmup_s = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
if mode not in ("keep-alive", "close"):
    sys.exit(f"plain.py: MODE must be keep-alive or close, not {mode!r}")

c = pycurl.Curl()  # one handle: libcurl keeps its connection between transfers
c.setopt(pycurl.URL, url)
if mode == "close":
    c.setopt(pycurl.FORBID_REUSE, 1)  # libcurl's way to close the connection after each transfer


def get() -> int:
    buffer = BytesIO()
    c.setopt(pycurl.WRITEDATA, buffer)
    try:
        c.perform()
    except pycurl.error as exc:
        sys.exit(f"plain.py: GET {url} failed: {exc}")
    status = c.getinfo(pycurl.RESPONSE_CODE)
    if status != 200:
        sys.exit(f"plain.py: GET {url} answered {status}")
    return len(buffer.getvalue())


end = time.monotonic() + warmup_s
while time.monotonic() < end:
    get()
total = 0
t0 = time.perf_counter()
for _ in range(count):
    total += get()
seconds = time.perf_counter() - t0
c.close()
print(json.dumps({"requests": count, "bytes": total, "seconds": seconds}))
