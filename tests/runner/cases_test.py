"""The runner, case by case: a test driver on a shipped scenario with some options, against the
real bench server, and what the cell must come to (status, reason, the trials stored, figures)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from clientlab.measuring.warmup import WarmupPolicy
from tests.support.fixtures import shipped

# stalls and budgets follow the clock: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


REF = "python-fake-reference"
AGREEING = WarmupPolicy(steady=100.0, falling=100.0, fresh_min_s=0.0)  # any three warm-ups agree
NEVER_STEADY = WarmupPolicy(steady=-1.0, max_trials=5, fresh_min_s=0.0)


@dataclass(frozen=True)
class Case:
    name: str
    driver: str
    scenario: str
    params: dict = field(default_factory=dict)      # the scenario's parameters
    changes: dict = field(default_factory=dict)     # fields of the expanded scenario replaced
    client: dict = field(default_factory=dict)      # its client settings replaced
    options: dict = field(default_factory=dict)     # the cell fixture's: trials, warmup, RunOptions fields
    status: str = "ok"
    reason: tuple[str, ...] = ()                    # parts of the reason, or the whole of it (exact=True)
    exact: bool = False
    kinds: tuple[str, ...] | None = None            # the stored trials' kinds, in order
    counts: dict = field(default_factory=dict)      # kind -> how many trials of it
    figures: dict = field(default_factory=dict)     # figure -> its value
    notes: tuple[str, ...] = ()                     # notes starting so
    last: str | None = None                         # the kind of the last trial stored
    processes: tuple[int, ...] | None = None        # which of the cell's processes ran each stored trial

    def __str__(self) -> str:
        return self.name


CASES = [
    # verification before timing: a driver that did the work wrong is never timed
    Case("a wrong body fails verification", "python-fake-wrong-body", "get-small", {"count": 5},
         status="failed", reason=("verification", "differ from what the server sent"), kinds=("verify",)),
    Case("less work when timed fails the timed trial", "python-fake-lazy", "get-small", {"count": 20},
         status="failed", reason=("timed trial 0", "20 expected, 10 reported")),
    Case("a crash fails with its exit code and stderr", "python-fake-crash", "get-small", {"count": 5},
         status="failed", reason=("exited (code 3)", "crashing on purpose"), last="fault"),
    Case("a hang is killed at the scenario's timeout", "python-fake-hang", "get-small", {"count": 5},
         changes={"timeout_s": 1.5}, status="failed", reason=("timed out after 2 s waiting for done",)),
    Case("a hang in verification costs the stall limit, not the scenario's", "python-fake-hang", "get-small",
         {"count": 5}, options={"stall_s": 1.5}, status="failed",
         reason=("the server saw no new request or byte for 2 s",)),
    Case("garbage on stdout fails the cell", "python-fake-garbage", "get-small", {"count": 5},
         status="failed", reason=("not a protocol message: 'Connecting to the server...'",)),
    # what a driver cannot do
    Case("a capability the manifest lacks: unsupported, never started", REF, "parallel-feeds",
         status="unsupported", reason=("manifest does not claim parallel",), exact=True, kinds=()),
    Case("an option the driver refuses: unsupported with its reason", REF, "post-form", {"count": 5},
         client={"options": {"tcp_nodelay": True}}, status="unsupported",
         reason=("option tcp_nodelay is not supported",), exact=True),
    # counts and budgets
    Case("a count the user set is never scaled", REF, "get-small", {"count": 30},
         options={"trial_seconds": 0.0001, "fixed_counts": frozenset({"get-small"})},
         figures={"requests": 30, "scenario_requests": 30}),
    Case("a first trial far over the budget stops the cell", REF, "get-small",
         options={"trials": 5, "trial_seconds": 1e-5}, counts={"timed": 1},
         notes=("stopped after one timed trial",)),
    # warm-up
    Case("one warm-up trial when the driver asks for one", REF, "get-small", {"count": 10},
         options={"warmup": 1}, counts={"warmup": 1}),
    Case("a JIT driver warms up until three trials agree", REF, "get-small", {"count": 10},
         options={"warmup": 2, "warmup_policy": AGREEING}, counts={"warmup": 3}),
    Case("a JIT driver that never settles stops at the cap and says so", REF, "get-small", {"count": 10},
         options={"warmup": 2, "warmup_policy": NEVER_STEADY}, counts={"warmup": 5},
         notes=("not steady after 5 warm-up trials",)),
    # processes
    Case("timed trials spread over forks, each fork warmed up", REF, "get-small", {"count": 10},
         options={"trials": 3, "warmup": 1, "forks": 3},
         kinds=("verify", "warmup", "timed", "warmup", "timed", "warmup", "timed"), figures={"processes": 3},
         processes=(0, 0, 0, 1, 1, 2, 2)),
    Case("a JIT driver keeps one process whatever the forks", REF, "get-small", {"count": 10},
         options={"trials": 3, "warmup": 2, "forks": 3, "warmup_policy": AGREEING}, figures={"processes": 1}),
    Case("a driver with no JIT warm-up gets a process of its own", REF, "get-small", {"count": 10},
         options={"warmup": 1}, figures={"kept_warm": False}),
]
CASES += [Case(f"the reference driver on {name}", REF, name, params, kinds=("verify", "timed", "timed"))
          for name, params in [("get-small", {"count": 50}), ("post-form", {"count": 20}),
                               ("post-multipart", {"count": 20}), ("redirect-get", {"count": 10}),
                               ("cookie-session", {"count": 10}), ("download-file", {"size": "3MB"})]]
CASES += [
    Case("a large body gets trials in each allocator mode, each in a process held in it", REF, "download-memory",
         {"size": "1MB", "count": 2},
         kinds=("verify", "timed", "timed", "mode:heap", "mode:heap", "mode:fresh pages", "mode:fresh pages"),
         processes=(0, 0, 0, 1, 1, 2, 2)),
    Case("a process whose trials changed allocator mode mid-life is said", "python-fake-fresh-later", "get-json-335k",
         {"count": 20}, options={"trials": 4}, processes=(0, 0, 0, 0, 0, 1, 1, 2, 2),
         notes=("process 1 changed allocator mode in the middle of its life: trial 0 heap, trial 1 heap, "
                "trial 2 fresh pages, trial 3 fresh pages",)),
    Case("no allocator-mode trials when the run asks for none", REF, "download-memory", {"size": "1MB", "count": 2},
         options={"allocator_modes": False}, kinds=("verify", "timed", "timed")),
    Case("no allocator-mode trials for a body below glibc's mmap floor", REF, "download-memory",
         {"size": "64KB", "count": 2}, kinds=("verify", "timed", "timed")),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(cell, case: Case):
    sc = shipped(case.scenario, **case.params)
    if case.client:
        sc = sc.model_copy(update={"client": sc.client.model_copy(update=case.client)})
    if case.changes:
        sc = sc.model_copy(update=case.changes)
    result, trials = cell(case.driver, sc, **case.options)
    assert result.status == case.status, result.reason
    if case.exact:
        assert (result.reason,) == case.reason
    for part in case.reason:
        assert part in (result.reason or "")
    kinds = [t["kind"] for t in trials]
    if case.kinds is not None:
        assert tuple(kinds) == case.kinds
    if case.processes is not None:   # every trial says which process ran it: a mode is a process's
        assert tuple(t["process"] for t in trials) == case.processes
    for kind, n in case.counts.items():
        assert kinds.count(kind) == n, kinds
    for name, value in case.figures.items():
        assert getattr(result.figures, name) == value, name
    for start in case.notes:
        assert any(note.startswith(start) for note in result.figures.notes), result.figures.notes
    if case.status == "ok":
        assert all(t["ok"] for t in trials if t["kind"] != "disturbed")
        assert result.figures.throughput > 0 and result.figures.wall_s.median > 0
    if case.last is not None:
        assert kinds[-1] == case.last
