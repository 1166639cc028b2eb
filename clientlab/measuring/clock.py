"""The clock the lab's own steps read, as a seam: a deadline, a warm-up's least time, how long a
process sat idle, a wait for the host to leave a slow phase. Tests give a clock they move by hand
(tests/support/clock.py) rather than patch time.monotonic. What a trial measures of its driver
(wall, CPU, set-up) comes from the meters and perf_counter, never from here; a cell's elapsed
time is a figure too, and waits on a live process's pipe keep real time."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """time.monotonic and time.sleep."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM = SystemClock()
