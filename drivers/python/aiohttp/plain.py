"""aiohttp in a plain loop, as its client quickstart writes one: one ClientSession, each
`async with session.get(url) as resp` after the last, the body from `await resp.read()`.
The library's plain loop of docs/driver-protocol.md §9:
    plain.py URL COUNT MODE WARMUP_S
"""

import asyncio
import json
import sys
import time

import aiohttp

url, count, mode, warmup_s = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
if mode not in ("keep-alive", "close"):
    sys.exit(f"plain.py: MODE must be keep-alive or close, not {mode!r}")


async def main() -> None:
    # close: force_close, aiohttp's documented way to a new connection per request (the driver's too)
    connector = aiohttp.TCPConnector(force_close=True) if mode == "close" else None
    async with aiohttp.ClientSession(connector=connector) as session:

        async def get() -> int:
            try:
                async with session.get(url) as resp:
                    if resp.status != 200:
                        sys.exit(f"plain.py: GET {url} answered {resp.status}")
                    return len(await resp.read())
            except aiohttp.ClientError as exc:
                sys.exit(f"plain.py: GET {url} failed: {exc}")

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
