"""A large answer's two allocator modes, each measured on purpose.

A body above glibc's mmap threshold (docs/measurement.md, "Two modes of a large answer") lands on
the heap or in pages mapped anew from the kernel, and which of the two a process does is settled
early in its life, by nothing its program chose. A cell's own processes show the mode they fell
into, and a user's program may meet the other. So after a cell's timed trials, where its bodies
are large enough for both, two more processes of the driver run a few trials each with glibc's
malloc held in one mode by its tunables: mmap threshold and trim threshold far above the body
(bodies kept on the heap), or the mmap threshold fixed at its floor (every body mapped anew).
Their trials are stored as `mode:heap` and `mode:fresh pages`, never timed trials: the cell's
figure stays its own processes' median, and the two modes stand beside it where they differ.
A runtime whose bodies do not come from glibc's malloc (Go's heap, the JVM's) shows the same
faults under both settings: it has one mode, and the cell says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clientlab.analysis.figures import FRESH_BODY, FRESH_MODE, HEAP_MODE, MMAP_THRESHOLD_MAX, MODE_KIND

if TYPE_CHECKING:
    from clientlab.runner.cell import Cell

HEAP, FRESH = HEAP_MODE, FRESH_MODE
TUNABLES = {
    # the dynamic threshold would rise to the largest block freed; fixed far above the body (and
    # trimming with it) every body stays on the heap
    HEAP: f"glibc.malloc.mmap_threshold={MMAP_THRESHOLD_MAX}:glibc.malloc.trim_threshold={2 * MMAP_THRESHOLD_MAX}",
    # fixed at its floor, the threshold never rises: every body above it is mapped anew
    FRESH: f"glibc.malloc.mmap_threshold={FRESH_BODY}",
}
KIND_PREFIX = MODE_KIND   # each mode's trials: RunOptions.mode_trials


def kind(mode: str) -> str:
    return KIND_PREFIX + mode


def mode_of(kind_: str) -> str | None:
    return kind_[len(KIND_PREFIX):] if kind_.startswith(KIND_PREFIX) else None


def env(mode: str) -> dict[str, str]:
    return {"GLIBC_TUNABLES": TUNABLES[mode]}


def due(cell: Cell) -> bool:
    """Whether the cell's bodies can fall into either mode and its driver can be started in each:
    a body held in memory, between glibc's mmap floor and its ceiling, a process per cell (not a
    JIT driver's process kept warm over the run, not a new process per trial), and the run asking
    for it."""
    if not cell.options.allocator_modes or cell.options.fresh_process or cell.jit() or cell.work is None:
        return False
    if any(r.sink == "file" for r in cell.work.requests):
        return False  # streamed through a small buffer: no body is ever whole in memory
    timed = [t for t in cell.log.trials if t.kind == "timed" and t.ok and t.work_bytes]
    if not timed or not cell.work.total_requests:
        return False
    body = min(t.work_bytes or 0 for t in timed) / cell.work.total_requests
    return FRESH_BODY <= body < MMAP_THRESHOLD_MAX
