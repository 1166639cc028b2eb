"""Pinning holds for every thread a runtime starts, not only for the first one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clientlab.measuring import affinity

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")


def _threads_cpus(pid: int) -> set[str]:
    out = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                out.add(line.split(":", 1)[1].strip())
    return out


def test_a_pinned_program_sees_one_core_from_its_start():
    cpu = max(os.sched_getaffinity(0))
    code = "import os; print(sorted(os.sched_getaffinity(0)))"
    out = subprocess.run(affinity.pinned([sys.executable, "-c", code], cpu), capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == f"[{cpu}]"


def test_every_thread_of_the_bench_server_runs_on_its_core():
    from clientlab.servers.bench import BenchServer

    cpu = max(os.sched_getaffinity(0))
    with BenchServer(cpu=cpu) as server:
        # the Go runtime starts its threads before main(): all of them carry the mask
        assert _threads_cpus(server.proc.pid) == {str(cpu)}


def test_no_core_leaves_the_program_as_it_is():
    assert affinity.pinned(["x", "y"], None) == ["x", "y"]
