"""httpx.AsyncClient in a plain loop, as httpx's async docs use one: one client, each
`await client.get(url)` after the last, the body in `content`. The library's plain loop of
docs/driver-protocol.md §9:
    plain.py URL COUNT MODE WARMUP_S
"""

import asyncio
import json
import sys
import time

import httpx

url, count, mode, warmup_s = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
if mode not in ("keep-alive", "close"):
    sys.exit(f"plain.py: MODE must be keep-alive or close, not {mode!r}")


async def main() -> None:
    # close: `Connection: close` on every request, HTTP/1.1's way (the driver's for keep_alive false)
    headers = {"Connection": "close"} if mode == "close" else None
    async with httpx.AsyncClient(headers=headers) as client:

        async def get() -> int:
            try:
                resp = await client.get(url)
            except httpx.HTTPError as exc:
                sys.exit(f"plain.py: GET {url} failed: {exc}")
            if resp.status_code != 200:
                sys.exit(f"plain.py: GET {url} answered {resp.status_code}")
            return len(resp.content)

        end = time.monotonic() + warmup_s
        while time.monotonic() < end:
            await get()
        total = 0
        t0 = time.perf_counter()
        for _ in range(count):
            total += await get()
        seconds = time.perf_counter() - t0
    print(json.dumps({"requests": count, "bytes": total, "seconds": seconds}))


asyncio.run(main())
