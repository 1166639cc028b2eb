"""urllib.request in a plain loop, as the standard library's docs fetch a URL:
`with urllib.request.urlopen(url) as f: f.read()`. urllib sends `Connection: close` and opens a
new connection for every request, so only MODE close runs. The library's plain loop of
docs/driver-protocol.md §9:
    plain.py URL COUNT MODE WARMUP_S
"""

import json
import sys
import time
import urllib.error
import urllib.request

url, count, mode, warmup_s = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
if mode == "keep-alive":
    sys.exit("plain.py: urllib.request cannot keep a connection (it closes every one): MODE keep-alive cannot run")
if mode != "close":
    sys.exit(f"plain.py: MODE must be keep-alive or close, not {mode!r}")


def get() -> int:
    try:
        with urllib.request.urlopen(url) as resp:
            if resp.status != 200:
                sys.exit(f"plain.py: GET {url} answered {resp.status}")
            return len(resp.read())
    except (urllib.error.URLError, OSError) as exc:  # HTTPError (another status) is a URLError
        sys.exit(f"plain.py: GET {url} failed: {exc}")


end = time.monotonic() + warmup_s
while time.monotonic() < end:
    get()
total = 0
t0 = time.perf_counter()
for _ in range(count):
    total += get()
seconds = time.perf_counter() - t0
print(json.dumps({"requests": count, "bytes": total, "seconds": seconds}))
