"""The lab's instruments: drivers that make no request and do a known amount of work between
`go` and `done`, so that what the lab measures around them can be held against what they did
(clientlab selfbench).

    instrument.py sleep    sleeps INSTRUMENT_SLEEP_S seconds (1.0): the lab's overhead on a trial
                           is the measured wall time less that
    instrument.py spin     a fixed loop of INSTRUMENT_SPIN rounds (3,000,000) of CPU work: the
                           spread of its wall time is the machine's noise floor

They speak the driver protocol (docs/driver-protocol.md) and nothing more: every job is taken
(its requests are not made), and its report has no responses.
"""

from __future__ import annotations

import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else ""


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def work() -> None:
    if MODE == "sleep":
        time.sleep(float(os.environ.get("INSTRUMENT_SLEEP_S", "1.0")))
    else:
        x = 0
        for i in range(int(os.environ.get("INSTRUMENT_SPIN", "3000000"))):
            x ^= i


def main() -> None:
    if MODE not in ("sleep", "spin"):
        sys.exit(f"instrument.py: the mode is sleep or spin, not {MODE!r}")
    for line in sys.stdin:
        kind = json.loads(line)["type"]
        if kind == "hello":
            send({"type": "hello", "protocol": 1, "versions": {"python": sys.version.split()[0]}})
        elif kind == "job":
            send({"type": "ready"})
        elif kind == "go":
            work()
            send({"type": "done"})
            send({"type": "report", "responses": [], "errors": []})
        else:
            send({"type": "error", "message": f"unknown message type {kind!r}"})


if __name__ == "__main__":
    main()
