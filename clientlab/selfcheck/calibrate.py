"""Is the lab part of the answer? Each cell beside the same client in a plain loop.

A careful user who writes a ten-line loop of the same client, against the same server on the same
core, must get the lab's figure. `clientlab crosscheck --bare` measures how far apart the two are:
each cell of the run takes its timed trials as usual, and right after each one the same driver
program, started a second time as a plain program would be (pinned to the driver's core, outside
the cell's control group, never stopped mid-loop, its runtime kept warm), runs the same
requests in its calibration loop (docs/driver-protocol.md §5), timed by its own clock, on a new
client each round as each trial has one. A client kept over the rounds would not compare: it
keeps one connection, whose mode (an answer waiting whole in the socket buffer, or the client
sleeping for the rest of it) then holds for every round, where each trial meets its own; and
over the server's fresh port for every trial it gathers a pooled connection a port, which
slowed the JDK's HttpClient to twice the CPU a request. The lab
then divides the cell's time per request by the loop's, trial by trial: 1.00 means the lab adds
nothing. These figures calibrate the lab; they never stand in a cell's figures.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clientlab import paths
from clientlab.analysis import stats
from clientlab.analysis.figures import FRESH_MODE, OwnProcesses, mapped_anew, own_processes, plain_verdict
from clientlab.drivers.job import plan
from clientlab.drivers.manifest import Driver
from clientlab.drivers.protocol import DriverFault, DriverProcess
from clientlab.measuring import warmup
from clientlab.measuring.procfs import cpu_seconds, page_faults, process_tree, thread_wakeups, wakeups_between
from clientlab.record import PlainCheck, PlainMode
from clientlab.runner import JIT_WARM_S, CellGroup, CellResult, Events, RunOptions, lab_run, loopback_config
from clientlab.scenario import Scenario
from clientlab.store import Store, Trial

if TYPE_CHECKING:
    from clientlab.hosts.hostsfile import Host

SCENARIOS = ("get-small", "get-json-335k")
TARGET = 0.10          # the lab's time per request within 10 % of the plain loop's
DIFFERENT_PER_REQUEST = 0.25  # page faults or wake-ups a request that tell two ways of working apart
                             # (a connection whose client sleeps for the rest of an answer: 0.5)
MIN_ALIKE = 3          # pairs in one mode enough to compare on their own
AWAKE_WHOLE = 0.1      # wake-ups a request: the answer waited whole in the socket buffer
ASLEEP_FOR_THE_REST = 0.3  # the client slept for the rest of the answer (0.5–0.6 on 335 KB)
MAPPED_ANEW = 10       # page faults a request this many times the other side's (+1): bodies mapped anew
HELLO_TIMEOUT_S = 60.0
WARMUP_MIN_ROUNDS = 2  # a plain loop's first rounds pay for its connection and first allocations
WARMUP_ROUND_TIMEOUT_S = 30.0  # a warm-up round at a timed trial's count, however slow the first
JIT_WARMUP_S = 20.0    # a JIT runtime's loop warms up as the lab's processes do (WarmupPolicy.is_settled and
                       # runner.JIT_WARM_S of work), at most this much longer
# the check's verdict on lab ÷ loop: its CI inside 1 ± TARGET, wholly outside it, or neither; an
# interval of less coverage than this decides nothing (three pairs' min–max covers the median 75 %
# of the time, five pairs' 94 %: the stop rule's "below ~0.9 the interval says little")
WITHIN, OFF, NOT_DECIDED = "within", "off", "not decided"
DECIDE_CONFIDENCE = 0.9


def decide(ratio: stats.Summary | None, tolerance: float = TARGET) -> str:
    """Within, off or not decided: lab ÷ loop's CI (at DECIDE_CONFIDENCE or more) inside
    1 ± tolerance, wholly outside it, or straddling a bound (or too few pairs to say)."""
    if ratio is None or ratio.ci_confidence < DECIDE_CONFIDENCE:
        return NOT_DECIDED
    low, high = 1 - tolerance, 1 + tolerance
    if low <= ratio.ci_low and ratio.ci_high <= high:
        return WITHIN
    if ratio.ci_high < low or ratio.ci_low > high:
        return OFF
    return NOT_DECIDED


@dataclass
class BareRound:
    """One round of the calibration loop: the driver's own wall time, the lab's CPU reading."""

    wall_s: float
    requests: int
    cpu_s: float | None          # None where the loop's own CPU could not be told apart (plainloop.py)
    page_faults: int | None
    wakeups: int | None

    @property
    def per_request_s(self) -> float:
        return self.wall_s / self.requests

    @property
    def cpu_per_request_s(self) -> float | None:
        return None if self.cpu_s is None else self.cpu_s / self.requests


@dataclass
class Pair:
    """A timed trial of the cell and the calibration round right after it, at the same count."""

    lab: Trial
    bare: BareRound

    @property
    def lab_s(self) -> float:
        """The lab's seconds per request."""
        return (self.lab.wall_s or 0.0) / self.bare.requests

    @property
    def lab_cpu_s(self) -> float:
        """The lab's CPU seconds per request (the cell's control group)."""
        return ((self.lab.user_s or 0.0) + (self.lab.sys_s or 0.0)) / self.bare.requests

    @property
    def ratio(self) -> float:
        """Lab ÷ bare, time per request (1.10: the lab's figure is 10 % slower)."""
        return self.lab_s / self.bare.per_request_s

    def ways(self) -> dict[str, tuple[float, float]]:
        """What tells two ways of working apart, a request at a time, lab and bare: page faults (a
        body's memory taken anew) and wake-ups (an answer read in pieces); those the lab read."""
        n = self.bare.requests
        seen = {"page faults": (self.lab.page_faults, self.bare.page_faults),
                "wake-ups": (self.lab.wakeups, self.bare.wakeups)}
        return {what: (lab / n, bare / n) for what, (lab, bare) in seen.items() if lab is not None and bare is not None}

    @property
    def alike(self) -> bool:
        """Whether both sides were in the same mode of a large answer (docs/measurement.md, "Two
        modes"): the answer waiting whole in the socket (about no wake-up a request) or the client
        sleeping for the rest of it (0.3 or more); bodies kept on the heap or mapped anew (ten
        times the page faults and more)."""
        ways = self.ways()
        if "wake-ups" in ways:
            low, high = sorted(ways["wake-ups"])
            if low < AWAKE_WHOLE and high >= ASLEEP_FOR_THE_REST:
                return False
        if "page faults" in ways:
            low, high = sorted(ways["page faults"])
            if high >= MAPPED_ANEW * (low + 1):
                return False
        return True


def _differing(pairs: list[Pair]) -> list[str]:
    """The measures of Pair.ways() whose medians over `pairs` are apart, as "6.9 page faults a
    request against 0.6"."""
    if not pairs:
        return []
    out = []
    for what in pairs[0].ways():
        lab = stats.median([p.ways()[what][0] for p in pairs])
        bare = stats.median([p.ways()[what][1] for p in pairs])
        if _apart(lab, bare):
            out.append(f"{lab:.1f} {what} a request against {bare:.1f}")
    return out


def _apart(a: float, b: float) -> bool:
    """Two readings a request that tell two ways of working apart: more than DIFFERENT_PER_REQUEST
    and more than half apart."""
    return abs(a - b) > max(DIFFERENT_PER_REQUEST, 0.5 * min(a, b))


def _readings(pid: int) -> tuple[float, int, dict[int, int]]:
    """CPU seconds, page faults and each thread's wake-ups of the process tree so far (from /proc)."""
    tree = process_tree(pid)
    return sum(cpu_seconds(tree)), page_faults(tree), thread_wakeups(tree)


class BareLoop:
    """The calibration process of one cell: the driver's own program, pinned to the driver's core,
    in the lab's control group (not the cell's), stopped (SIGSTOP) between its rounds so that a
    runtime's own threads take nothing from the cells' trials."""

    def __init__(self, driver: Driver, cpu: int | None):
        self.driver = driver
        self.proc = DriverProcess(driver.argv, driver.folder, cpu=cpu, env=driver.env())
        self.proc.hello(HELLO_TIMEOUT_S)
        self.warm = False
        self.rounds = 0
        self._pause()

    def _pause(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGSTOP)

    def _resume(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGCONT)

    def round(self, job: dict, timeout_s: float) -> BareRound:
        """One round of the job's requests on a client of its own (the first round's client is built
        by its bare message, a later one's after a one-request job ended the last); raises DriverFault
        on any failure."""
        expected = sum(int(r.get("repeat", 1)) for r in job["requests"])
        self._resume()
        try:
            if self.rounds:
                self._new_client(job, timeout_s)
            self.rounds += 1
            before = _readings(self.proc.pid)
            self.proc.send({"type": "bare", "job": job})
            answer = self.proc.receive({"bare"}, timeout_s)
            after = _readings(self.proc.pid)
        finally:
            self._pause()
        if answer["type"] == "unsupported":
            raise DriverFault(f"calibration loop unsupported: {answer.get('reason')}")
        if answer["type"] == "error":
            raise DriverFault(f"no calibration loop: {answer.get('message')}")
        wall, got, errors = answer.get("wall_s"), answer.get("requests"), answer.get("errors")
        if not isinstance(wall, (int, float)) or wall <= 0:
            raise DriverFault(f"calibration round without a wall time: {answer}")
        if got != expected or errors:
            why = f": {answer['error']}" if answer.get("error") else ""
            raise DriverFault(f"calibration round got {got} responses and {errors} errors of {expected}{why}")
        woken = wakeups_between(before[2], after[2])
        return BareRound(float(wall), expected, after[0] - before[0], after[1] - before[1], woken)

    def _new_client(self, job: dict, timeout_s: float) -> None:
        """End the kept client, so that the next round builds its own: a job message closes the
        calibration loop's client (protocol §5), and this one, a single request of the round's
        job, is then run to its report like any job."""
        first = dict(job["requests"][0], repeat=1)
        for message, wanted in (({"type": "job", "job": dict(job, requests=[first])}, ("ready",)),
                                ({"type": "go"}, ("done", "report"))):
            self.proc.send(message)
            for kind in wanted:
                answer = self.proc.receive({kind}, timeout_s)
                if answer["type"] != kind:
                    why = answer.get("reason") or answer.get("message") or answer["type"]
                    raise DriverFault(f"no new client for the calibration loop: {why}")

    def close(self) -> None:
        self._resume()
        self.proc.close()


@dataclass
class Calibration:
    """One cell beside its calibration loop."""

    driver: str
    scenario: str
    pairs: list[Pair] = field(default_factory=list)
    warmup_rounds: int = 0
    problem: str | None = None   # why the loop stopped (no bare mode, a failed round)
    lab: CellResult | None = None
    reference: str = "bare"      # the loop beside the cell: the driver's own (bare) or the library's (plain)
    run_again: list[str] = field(default_factory=list)     # why each disturbed round was run again
    kept_disturbed: list[str] = field(default_factory=list)  # disturbed rounds kept: no retries left
    note: str | None = None      # the manifest's known cause of a gap (plain_notes), with its evidence
    # a large answer's allocator modes: each mode's trials (runner/allocator.py) beside rounds of the
    # loop started in the same mode
    mode_pairs: dict[str, list[Pair]] = field(default_factory=dict)

    @property
    def decision(self) -> str:
        """Within, off or not decided (decide): what ends the cell's pairs when the check paces them."""
        return decide(self.ratio_summary)

    def mode_decision(self, mode: str) -> str:
        pairs = self.mode_pairs.get(mode, [])
        return decide(self._summary([p.ratio for p in pairs]))

    def fresh_pages(self) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """Of the pairs (not those held in a mode), how many of the lab's trials and of the loop's
        rounds took a large body's pages anew (figures.mapped_anew: the bodies the lab's trial
        read, the loop's at the same count), each of how many were told; None where no side
        could be told."""
        lab, loop = [], []
        for p in self.pairs:
            for side, faults in ((lab, p.lab.page_faults), (loop, p.bare.page_faults)):
                anew = mapped_anew(faults, p.bare.requests, p.lab.work_bytes or 0)
                if anew is not None:
                    side.append(anew)
        if not lab and not loop:
            return None
        return (sum(lab), len(lab)), (sum(loop), len(loop))

    def rounds_note(self) -> str | None:
        """How many of the loop's rounds the machine disturbed, or None."""
        if not self.run_again and not self.kept_disturbed:
            return None
        kept = f", {len(self.kept_disturbed)} kept disturbed (no retries left)" if self.kept_disturbed else ""
        return f"{len(self.run_again) + len(self.kept_disturbed)} {self.reference} rounds disturbed, " \
               f"{len(self.run_again)} run again{kept}"

    def _summary(self, values: list[float]) -> stats.Summary | None:
        return stats.summarize(values) if values else None

    @property
    def compared(self) -> list[Pair]:
        """The pairs whose two sides were in one mode, when MIN_ALIKE or more were; else every
        pair. A trial and a round in different modes (one client asleep for the rest of each
        answer, the other not; one process mapping every body anew) compare the modes, not the lab
        with the loop: such pairs are left out and counted (differences), never averaged in."""
        alike = [p for p in self.pairs if p.alike]
        return alike if len(alike) >= MIN_ALIKE else self.pairs

    @property
    def lab_summary(self) -> stats.Summary | None:
        """The lab's seconds per request over the compared pairs."""
        return self._summary([p.lab_s for p in self.compared])

    @property
    def bare_summary(self) -> stats.Summary | None:
        return self._summary([p.bare.per_request_s for p in self.compared])

    @property
    def ratio_summary(self) -> stats.Summary | None:
        """Lab ÷ bare, pair by pair: a drift of the host over the run moves both sides of a pair."""
        return self._summary([p.ratio for p in self.compared])

    @property
    def within_target(self) -> bool | None:
        """The median alone within 1 ± TARGET (None: no ratio); the driver's own loop (--bare) is
        judged by it. The plain-loop check judges by `verdict`."""
        r = self.ratio_summary
        return None if r is None else abs(r.median - 1) <= TARGET

    @property
    def verdict(self) -> str | None:
        """What the check says of the cell, the one verdict its table, its summary and its exit code
        give: beside the library's plain loop, `decision` (a cell without a ratio, whose loop or
        cell failed, is not decided: the check could not decide it); beside the driver's own
        loop, whose cells end by their own stop rule and so often have too few pairs for a 90 %
        interval, its median within 1 ± TARGET or not (None without a ratio: not judged)."""
        if self.reference == "plain":
            return plain_verdict(self.decision, self.mode_figures())
        within = self.within_target
        return None if within is None else WITHIN if within else OFF

    def differences(self) -> list[str]:
        """What the lab's trials did differently from the loop's rounds: how many pairs were left
        out for being in two modes, and how (page faults and wake-ups a request, medians, lab
        against bare), then where the compared pairs' sides still differ."""
        compared = self.compared
        left_out = [p for p in self.pairs if p not in compared]
        out = []
        if left_out:
            out.append(f"{len(left_out)} of {len(self.pairs)} pairs left out, their sides in two modes ("
                       + "; ".join(_differing(left_out) or ["modes of their own"]) + ")")
        return out + _differing(compared)

    def to_figure(self) -> dict[str, Any]:
        """What a cell keeps of its check with its figures (`plain` or `bare`): lab ÷ loop, its CI,
        both sides' seconds a request, the pairs compared and left out, and why there is no ratio."""
        ratio, lab, loop = self.ratio_summary, self.lab_summary, self.bare_summary
        return PlainCheck(reference=self.reference, problem=self.problem,
                          ratio=ratio.median if ratio else None,
                          ratio_ci_low=ratio.ci_low if ratio else None, ratio_ci_high=ratio.ci_high if ratio else None,
                          lab_s_per_request=lab.median if lab else None,
                          plain_s_per_request=loop.median if loop else None,
                          pairs=len(self.pairs), compared=len(self.compared),
                          differences=tuple(self.differences()),
                          decision=self.decision if ratio else None,
                          ratio_ci_confidence=ratio.ci_confidence if ratio else None,
                          note=self.note, modes=self.mode_figures(),
                          lab_precision=lab.precision if lab else None,
                          plain_precision=loop.precision if loop else None).to_json()

    def lab_processes(self) -> OwnProcesses | None:
        """The lab's processes of the pairs (not those held in a mode) by allocator mode: a mode
        is a process's, and several of the cell's trials ran in one process (figures.own_processes);
        None where its trials did not say which process ran them, or its bodies are small."""
        if not self.pairs:
            return None
        return own_processes([p.lab for p in self.pairs], self.pairs[0].bare.requests)

    def mode_figures(self) -> tuple[PlainMode, ...]:
        """Each allocator mode's two sides and their ratio, where the loop ran in it."""
        out = []
        own = self.fresh_pages()
        processes = self.lab_processes()
        for mode, pairs in self.mode_pairs.items():
            if not pairs:
                continue
            ratio = stats.summarize([p.ratio for p in pairs])
            counts: dict[str, int | None] = {}
            for side, index in (("lab", 0), ("plain", 1)):
                fresh, told = own[index] if own is not None else (0, 0)
                if told:
                    counts[f"{side}_own"] = fresh if mode == FRESH_MODE else told - fresh
                    counts[f"{side}_own_of"] = told
            if processes is not None:
                counts["lab_processes"] = processes.fresh if mode == FRESH_MODE else processes.heap
                counts["lab_processes_of"] = processes.told
            out.append(PlainMode(mode=mode, lab_s_per_request=stats.median([p.lab_s for p in pairs]),
                                 plain_s_per_request=stats.median([p.bare.per_request_s for p in pairs]),
                                 ratio=ratio.median, ratio_ci_low=ratio.ci_low, ratio_ci_high=ratio.ci_high,
                                 pairs=len(pairs), decision=decide(ratio), **counts,
                                 lab_samples=tuple(p.lab_s for p in pairs),
                                 plain_samples=tuple(p.bare.per_request_s for p in pairs)))
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        """Every pair, for the run's record and --json."""
        return {
            "driver": self.driver, "scenario": self.scenario, "reference": self.reference,
            "warmup_rounds": self.warmup_rounds,
            "problem": self.problem, "differences": self.differences(),
            "run_again": self.run_again, "kept_disturbed": self.kept_disturbed,
            "decision": self.decision, "note": self.note,
            "pairs": [_pair_dict(p) for p in self.pairs],
            "mode_pairs": {mode: [_pair_dict(p) for p in pairs] for mode, pairs in self.mode_pairs.items()},
        }


@dataclass(frozen=True)
class Verdicts:
    """A check's cells by their verdict (Calibration.verdict); cells not judged are left out."""

    within: tuple[Calibration, ...]
    off: tuple[Calibration, ...]
    not_decided: tuple[Calibration, ...]

    @classmethod
    def of(cls, cells: list[Calibration]) -> Verdicts:
        said = [(c, c.verdict) for c in cells]
        return cls(*(tuple(c for c, v in said if v == wanted) for wanted in (WITHIN, OFF, NOT_DECIDED)))

    @property
    def judged(self) -> int:
        return len(self.within) + len(self.off) + len(self.not_decided)

    @property
    def overall(self) -> str | None:
        """The check's answer: off when one cell is off, else not decided when one is, else within
        (None: no cell judged)."""
        if self.off:
            return OFF
        if self.not_decided:
            return NOT_DECIDED
        return WITHIN if self.within else None


def _pair_dict(p: Pair) -> dict[str, Any]:
    return {"lab_s": p.lab_s, "lab_cpu_s": p.lab_cpu_s, "bare_s": p.bare.per_request_s,
            "bare_cpu_s": p.bare.cpu_per_request_s, "requests": p.bare.requests,
            "lab_faults": p.lab.page_faults, "bare_faults": p.bare.page_faults,
            "lab_wakeups": p.lab.wakeups, "bare_wakeups": p.bare.wakeups, "alike": p.alike}


class BareBeside:
    """The runner's `beside`: a calibration loop per cell, a round right after each timed trial;
    the cells' own stop rule ends their trials."""

    most_pairs: int | None = None

    def __init__(self, cpu: int | None):
        self.cpu = cpu
        self.loops: dict[tuple[str, str], BareLoop] = {}
        self.cells: dict[tuple[str, str], Calibration] = {}
        self.scratch = paths.scratch_dir()

    def calibration(self, driver: str, scenario: str) -> Calibration:
        return self.cells.setdefault((driver, scenario), Calibration(driver, scenario))

    def decided(self, driver: str, scenario: str) -> bool:
        return False

    def mode_decided(self, driver: str, scenario: str, mode: str) -> bool:
        return True   # its cells end by their own stop rule: nothing paces their modes

    def after_modes(self, driver: Driver, scenario: Scenario, work: Scenario, server: Any,
                    trials: list[Trial]) -> None:
        """The driver's own loop runs in one process of its own: its allocator mode is that one's."""

    def after_trial(self, driver: Driver, scenario: Scenario, work: Scenario, server: Any, trial: Trial) -> None:
        cal = self.calibration(driver.id, scenario.label)
        if cal.problem is not None or not trial.ok or not trial.wall_s:
            return
        try:
            loop = self._loop(driver, scenario.label)
            if not loop.warm:
                self._warm_up(loop, cal, work, server)
            # a round may take 10× the lab's trial (at least 30 s: a slow phase), never the scenario's whole limit
            bare = self._round(loop, work, server, max(30.0, 10 * trial.wall_s))
        except DriverFault as exc:
            cal.problem = str(exc).splitlines()[0]
            self._close(driver.id, scenario.label)
            return
        cal.pairs.append(Pair(trial, bare))

    def _loop(self, driver: Driver, scenario: str) -> BareLoop:
        key = (driver.id, scenario)
        if key not in self.loops:
            self.loops[key] = BareLoop(driver, self.cpu)
        return self.loops[key]

    def _round(self, loop: BareLoop, work: Scenario, server: Any, timeout_s: float) -> BareRound:
        planned = plan(work, server.endpoint, self.scratch, verify=False, tag=f"{os.getpid()}-bare")
        try:
            return loop.round(planned.job, timeout_s)
        finally:
            for path in planned.files:
                path.unlink(missing_ok=True)

    def _warm_up(self, loop: BareLoop, cal: Calibration, work: Scenario, server: Any) -> None:
        """Rounds until the loop is warm: two, or for a JIT runtime (a manifest warm-up over one)
        as the lab warms its own JIT processes: until it stops getting faster and has done
        JIT_WARM_S of work, at most JIT_WARMUP_S longer."""
        jit = loop.driver.manifest.warmup > 1
        per_request: list[float] = []
        done_s = 0.0
        started = time.monotonic()
        while True:
            rnd = self._round(loop, work, server, WARMUP_ROUND_TIMEOUT_S)
            per_request.append(rnd.per_request_s)
            done_s += rnd.wall_s
            cal.warmup_rounds += 1
            if not jit and len(per_request) >= WARMUP_MIN_ROUNDS:
                break
            if jit and (done_s >= JIT_WARM_S and warmup.DEFAULT.is_settled(per_request)
                        or time.monotonic() - started > JIT_WARM_S + JIT_WARMUP_S):
                break
        loop.warm = True

    def _close(self, driver: str, scenario: str) -> None:
        loop = self.loops.pop((driver, scenario), None)
        if loop is not None:
            loop.close()

    def close(self) -> None:
        while self.loops:
            self.loops.popitem()[1].close()


def run(store: Store, drivers: list[Driver], scenarios: list[Scenario], options: RunOptions,
        events: Events | None = None, server_host: tuple[Host, Path] | None = None) -> tuple[int, list[Calibration]]:
    """Every driver on every scenario, each cell beside its calibration loop; the stored run's id
    and one Calibration per cell (the lab's cells are stored as in any run; the pairs go into
    the run's record under `calibration`)."""
    with lab_run(store, loopback_config("calibration", drivers, scenarios), options, events, server_host) as lab, \
            lab.bench_server() as bench, lab.runner(bench) as runner:
        run_id = lab.run_id
        beside = runner.beside = BareBeside(lab.placement.driver)
        try:
            for result in runner.run_groups([CellGroup(drivers, s) for s in scenarios]):
                beside.calibration(result.driver, result.scenario).lab = result
        finally:
            beside.close()
            store.update_config(run_id, calibration=[c.to_dict() for c in beside.cells.values()])
    return run_id, [beside.calibration(d.id, s.label) for s in scenarios for d in drivers]
