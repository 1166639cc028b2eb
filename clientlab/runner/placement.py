"""Which core each side of a measurement runs on."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    """Which core the lab's own threads, the bench server and the driver run on (None: any).

    split: server (and lab) on one core, driver on another — no competition, but every request
    pays a cross-core wake-up. shared: driver and server on one core, the lab on the other — no
    wake-up across cores, but the server's work is on the driver's core. free: the scheduler decides.
    """

    name: str
    lab: int | None
    server: int | None
    driver: int | None

    @classmethod
    def of(cls, name: str) -> Placement:
        available = sorted(os.sched_getaffinity(0))
        if name == "free" or len(available) < 2:
            return cls(name if len(available) >= 2 else "free", None, None, None)
        first, second = available[0], available[1]
        if name == "shared":
            return cls(name, first, second, second)
        return cls("split", first, first, second)

    def apply_to_lab(self) -> None:
        if self.lab is not None:
            os.sched_setaffinity(0, {self.lab})  # the lab's own threads stay off the driver's core


def pick_cpus() -> tuple[int | None, int | None]:
    """(server CPU, driver CPU) of the split placement."""
    p = Placement.of("split")
    return p.server, p.driver
