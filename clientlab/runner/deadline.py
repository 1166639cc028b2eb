"""When the time given to a group of cells ends: handed to each step that must stop in time."""

from __future__ import annotations

from dataclasses import dataclass, field

from clientlab.measuring.clock import SYSTEM, Clock


@dataclass(frozen=True)
class Deadline:
    """A moment on `clock`'s monotonic time; `end` None: no time limit."""

    end: float | None = None
    clock: Clock = field(default=SYSTEM, compare=False, repr=False)

    @classmethod
    def after(cls, seconds: float | None, clock: Clock = SYSTEM) -> Deadline:
        return cls(clock.monotonic() + seconds if seconds else None, clock)

    def passed(self) -> bool:
        return self.end is not None and self.clock.monotonic() >= self.end

    def left(self, at_most: float) -> float:
        """The time left, capped at `at_most` (all of it without a limit)."""
        if self.end is None:
            return at_most
        return max(0.0, min(at_most, self.end - self.clock.monotonic()))

    def share(self, weight: float, weight_left: float) -> Deadline:
        """The deadline of the next part of the time left, in proportion to its weight (its cells)
        among those still to run: a part that ends early leaves its rest to the others."""
        if self.end is None:
            return self
        now = self.clock.monotonic()
        return Deadline(now + max(0.0, self.end - now) * weight / max(weight_left, weight, 1e-9), self.clock)


NONE = Deadline()
