"""A fleet run's batches: the drivers shared out in chunks, each chunk measured on every scenario
with the baseline driver beside it, as one ordinary interleaved `clientlab run` on one lab host.

Each batch carries the baseline so that a cell measured on one host is read as a ratio to the
baseline measured in the same run, on the same host, in the same minutes; the price is the
baseline's cells once per batch, hence few, large batches by default: as many as there are hosts.
A batch of `clientlab experiment … --on` is one whole experiment instead (clientlab/fleet/experiments.py)."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field

from clientlab.errors import LabInputError

DEFAULT_BASELINE = "c-libcurl"


@dataclass(frozen=True)
class Batch:
    """One batch: its run's uid (stored once whichever host measures it), and what it measures: its
    drivers and the baseline (a `clientlab run` batch), or one whole experiment."""

    index: int             # 1-based, in the order the batches were made
    drivers: tuple[str, ...]
    baseline: str | None
    uid: str = field(default_factory=lambda: uuid.uuid4().hex)
    experiment: str | None = None

    @property
    def command(self) -> str:
        """The `clientlab` subcommand the batch runs on its host."""
        return "experiment" if self.experiment else "run"

    def driver_ids(self) -> list[str]:
        """The baseline first, then the batch's drivers (the baseline once however it was asked for)."""
        return [self.baseline, *(d for d in self.drivers if d != self.baseline)] if self.baseline else list(self.drivers)

    def label(self, total: int) -> str:
        shown = (f"experiment {self.experiment}" if self.experiment
                 else ", ".join(d for d in self.drivers if d != self.baseline) or "(baseline only)")
        return f"batch {self.index}/{total} [{shown}]"


def default_batch_size(drivers: int, hosts: int) -> int:
    """Drivers a batch when none is asked: one batch a host, since each batch measures the baseline again."""
    return max(1, math.ceil(drivers / max(1, hosts)))


def split(drivers: list[str], baseline: str, batch_size: int | None, hosts: int) -> list[Batch]:
    """The batches, in order: the drivers other than the baseline in chunks of `batch_size` (default:
    one chunk a host), each with the baseline; only the baseline asked: one batch of it alone."""
    if batch_size is not None and batch_size < 1:
        raise LabInputError(f"--batch-size {batch_size}: a batch takes at least one driver")
    others = [d for d in dict.fromkeys(drivers) if d != baseline]
    if not others:
        return [Batch(1, (baseline,), baseline)]
    size = batch_size or default_batch_size(len(others), hosts)
    chunks = [tuple(others[i:i + size]) for i in range(0, len(others), size)]
    return [Batch(n, chunk, baseline) for n, chunk in enumerate(chunks, start=1)]


def experiment_batches(names: list[str]) -> list[Batch]:
    """One batch an experiment: its claims compare its own cells, so one host measures them all."""
    return [Batch(n, (), None, experiment=name) for n, name in enumerate(names, start=1)]
