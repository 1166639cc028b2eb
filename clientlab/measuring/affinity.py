"""Pinning a program to one core from its first instruction.

Setting the affinity of a process after it started races with the threads its runtime starts at
once (Go's scheduler threads, the JVM's GC and compiler threads, Node's workers): those keep the
mask they were born with and run on any core, and the runtime sizes itself (GOMAXPROCS, the JVM's
processor count) for every core. `taskset` sets the mask before the program executes, so every
thread inherits it and the runtime sees one core.
"""

from __future__ import annotations

import os
import shutil


def pinned(argv: list[str], cpu: int | None) -> list[str]:
    """`argv` started on core `cpu` (None: unchanged)."""
    if cpu is None:
        return argv
    taskset = shutil.which("taskset")
    return [taskset, "-c", str(cpu), *argv] if taskset else argv


def pin_late(pid: int, cpu: int | None) -> None:
    """Where taskset is missing: pin the process after its start (its early threads may escape)."""
    if cpu is None or shutil.which("taskset"):
        return
    try:
        os.sched_setaffinity(pid, {cpu})
    except OSError:
        pass  # the process may already be gone; whoever reads from it reports that
