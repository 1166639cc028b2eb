"""A clock the test moves by hand (clientlab.measuring.clock.Clock): sleeping moves it on, and so
does `advance`; nothing waits."""

from __future__ import annotations


class ManualClock:
    def __init__(self, now: float = 0.0):
        self.now = now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds
