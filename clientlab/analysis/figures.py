"""A cell's reported figures, computed from its timed trials (and nothing the driver timed)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from clientlab.analysis import stats
from clientlab.record import CellFigures, Mode, PlainMode, ServerSummary, WallStats
from clientlab.store import Trial

STALL_GAP_NS = 30_000_000  # a pause of 30 ms or more inside one request's arrival (Nagle is ~40 ms)
STALL_MAX_READS = 4        # …in a request that came in at most this many reads
EXPECT_STALL_NS = 900_000_000  # libcurl waits 1 s for "100 Continue" before sending the body anyway


def server_summary(snapshot: dict[str, Any], sequential: bool) -> dict[str, Any]:
    """What the server saw in one trial, kept with the trial (the diagnosis reads this)."""
    log = snapshot.get("log") or []  # null when the server logged no request
    per_conn = [c.get("requests", 0) for c in snapshot.get("conns", [])]
    arrivals = sorted(e["first_byte_ns"] for e in log if e.get("first_byte_ns"))
    summary: dict[str, Any] = {
        "connections": snapshot.get("connections", 0),
        "requests": snapshot.get("requests", 0),
        "tls": snapshot.get("tls", {}),
        "versions": snapshot.get("versions", {}),
        "bytes_in": snapshot.get("bytes_in", 0),
        "bytes_out": snapshot.get("bytes_out", 0),
        "requests_per_conn": {"min": min(per_conn), "median": stats.median(per_conn), "max": max(per_conn)}
        if per_conn else {},
        "carrying_connections": sum(1 for n in per_conn if n),  # of those listed: they carried requests
        "statuses": dict(Counter(str(e.get("status")) for e in log)),
        "resp_body_bytes": sum(e.get("resp_body_bytes", 0) for e in log),
        "req_body_bytes": sum(e.get("req_body_bytes", 0) for e in log),
        "multi_read_requests": sum(1 for e in log if e.get("reads", 0) >= 2),
        # a request that arrived in a few pieces with a long pause between them (headers, then the
        # body): a large upload arrives in many reads, and its pauses are flow control, not Nagle
        "stalled_requests": sum(1 for e in log if e.get("max_read_gap_ns", 0) >= STALL_GAP_NS
                                and e.get("reads", 0) <= STALL_MAX_READS),
        "max_read_gap_ms": max((e.get("max_read_gap_ns", 0) for e in log), default=0) / 1e6,
        "stall_gap_ms_median": stats.median(stalls) if (stalls := [
            e["max_read_gap_ns"] / 1e6 for e in log if e.get("max_read_gap_ns", 0) >= STALL_GAP_NS
            and e.get("reads", 0) <= STALL_MAX_READS]) else 0.0,
        "expect_continue": sum(1 for e in log if e.get("expect_continue")),
        "expect_stalled": sum(1 for e in log if e.get("expect_continue")
                              and e.get("max_read_gap_ns", 0) >= EXPECT_STALL_NS),
        "gzip": sum(1 for e in log if e.get("gzip")),
        "idle_connections": snapshot.get("idle_connections", 0),  # opened in the trial, carried no request
        "kept_open": snapshot.get("kept_open", 0),  # open before the trial and still open at its end
    }
    if snapshot.get("alt_svc"):  # answers offered HTTP/3 (the TLS port's, when the server has it)
        summary["alt_svc"] = snapshot["alt_svc"]
    if snapshot.get("cap"):  # the server's connection cap: who had to wait for a slot
        cap = snapshot["cap"]
        summary["cap"] = {"limit": cap["limit"], "peak_open": cap["peak_open"], "waited": cap["waited"],
                          "wait_ms": cap["wait_ns"] / 1e6, "idle_closed": cap["idle_closed"]}
    if "dns" in snapshot:  # the network lab's DNS: what the client's lookups cost it
        dns = snapshot["dns"]
        summary["dns"] = {"queries": dns.get("queries", 0), "by_type": dns.get("by_type", {}),
                          "names": len(dns.get("by_name", {}))}
    if sequential and len(arrivals) > 1:
        # server-observed time from one request's arrival to the next: the client's full cycle
        gaps_ms = [(b - a) / 1e6 for a, b in zip(arrivals, arrivals[1:])]
        summary["cycle_ms"] = stats.percentiles(gaps_ms)
    return summary


PAGE = 4096
FRESH_BODY = 128 * 1024   # bodies from this size on may be mapped afresh by the allocator (diagnose.py)
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024   # glibc's dynamic mmap threshold rises no higher (64-bit)
FRESH_SHARE = 0.5         # ... when the faults of a request cover this share of its body's pages


def mapped_anew(page_faults: float | None, requests: int, work_bytes: float) -> bool | None:
    """Whether `requests` answers, `work_bytes` of bodies in all, had each body's memory mapped
    anew from the kernel (a page fault for every 4 KB of it: their faults cover FRESH_SHARE of
    its pages) or kept on the heap; None where that cannot be told: faults not read, or a body
    with no mode to be in (under FRESH_BODY glibc keeps it on the heap, from MMAP_THRESHOLD_MAX
    on it maps every one)."""
    if page_faults is None or not requests:
        return None
    body = work_bytes / requests
    if not FRESH_BODY <= body < MMAP_THRESHOLD_MAX:
        return None
    return page_faults / requests * PAGE >= FRESH_SHARE * body


def _fault_modes(timed: list[Trial], requests: int) -> list[stats.Mode] | None:
    """Two modes when some trials took each large body's memory anew from the kernel (a page
    fault per 4 KB of it) and others kept bodies on the heap: two processes' allocator states,
    even when their times are closer than stats.modes' gap, but not when they cost the same
    within their own spread (stats.same_within_spread): then the cell has one figure. Fastest
    mode first."""
    fresh, heap = [], []
    for t in timed:
        anew = mapped_anew(t.page_faults, requests, t.work_bytes or 0)
        if anew is None:
            return None
        (fresh if anew else heap).append(t.wall_s or 0.0)
    if min(len(fresh), len(heap)) < stats.MODE_MIN_TRIALS or stats.same_within_spread(fresh, heap):
        return None
    return sorted([stats.Mode(stats.median(fresh), len(fresh)), stats.Mode(stats.median(heap), len(heap))],
                  key=lambda m: m.median)


MODE_KIND = "mode:"   # the kind of a trial in a process held in one allocator mode (runner/allocator.py)
HEAP_MODE, FRESH_MODE = "heap", "fresh pages"


@dataclass(frozen=True)
class OwnProcesses:
    """The cell's own driver processes (its timed trials grouped by Trial.process) by the
    allocator mode they were in: a process is in the mode all its timed trials were in; one whose
    trials fell into both changed mode in the middle of its life, is counted in neither, and is
    said (`changed`, `changes`: which process, which of its trials were in which mode)."""

    heap: int
    fresh: int
    changed: int
    changes: tuple[str, ...] = ()

    @property
    def told(self) -> int:
        return self.heap + self.fresh + self.changed


def own_processes(timed: list[Trial], requests: int) -> OwnProcesses | None:
    """The cell's processes by allocator mode (OwnProcesses); None where a trial does not say
    which process ran it (a store written before trials said so) or how many page faults it
    took, or where its bodies have no mode to be in (mapped_anew)."""
    if not timed or not requests or any(t.process is None for t in timed):
        return None
    anew = [mapped_anew(t.page_faults, requests, t.work_bytes or 0) for t in timed]
    if None in anew:
        return None   # no body the allocator may map anew (no mode to be in), or no faults read
    by: dict[int, list[tuple[Trial, bool | None]]] = {}
    for t, fresh_pages in zip(timed, anew):
        by.setdefault(t.process or 0, []).append((t, fresh_pages))
    heap = fresh = 0
    changes = []
    for process, mine in sorted(by.items()):
        modes = {fresh_pages for _, fresh_pages in mine}
        if modes == {False}:
            heap += 1
        elif modes == {True}:
            fresh += 1
        else:
            said = ", ".join(f"trial {t.idx} {FRESH_MODE if fresh_pages else HEAP_MODE}" for t, fresh_pages in mine)
            changes.append(f"process {process + 1} changed allocator mode in the middle of its life: {said}")
    return OwnProcesses(heap, fresh, len(changes), tuple(changes))


def modes_alike(modes: tuple[PlainMode, ...], side: str) -> str | None:
    """Why one side ("lab" or "plain") of a plain-loop check has its two allocator modes as one
    figure (stats.same_within_spread on its pairs' seconds a request in each), or None: apart, or
    their spread was not stored (then both are shown: a cell's modes are hidden only where its own
    spread says they cost the same)."""
    samples = [list(getattr(m, f"{side}_samples")) for m in modes]
    if len(samples) != 2 or not all(samples):
        return None
    return stats.same_within_spread(samples[0], samples[1])


def two_figures(modes: tuple[PlainMode, ...]) -> bool:
    """Whether a plain-loop check's allocator modes, each side held in each, cost apart on either
    side: then the cell has two figures and is judged mode by mode (plain_verdict)."""
    held = tuple(m for m in modes if m.ratio is not None)
    return len(held) == 2 and not (modes_alike(held, "lab") and modes_alike(held, "plain"))


WITHIN, OFF, NOT_DECIDED = "within", "off", "not decided"


def plain_verdict(decision: str | None, modes: tuple[PlainMode, ...]) -> str:
    """A cell's verdict beside its library's plain loop. Where a large answer's two allocator
    modes cost apart on either side (two figures), the cell is judged mode by mode: within when
    within in both, off when off in either, else not decided. A mode is judged by the pairs held
    in it on purpose, and by the cell's own pairs where every one of them had both sides in it
    (like for like, often many more pairs; the two disagreeing decide nothing); its own pairs
    otherwise compare whatever mode each side's process fell into (the lab's kept process on the
    heap, a fresh loop mapping every body anew), so their ratio is the modes' difference as much
    as the lab's, and decides nothing. With one figure, or no modes: `decision`, the pairs' own."""
    if not two_figures(modes):
        return decision or NOT_DECIDED
    said = [mode_verdict(decision, m) for m in modes if m.ratio is not None]
    return OFF if OFF in said else WITHIN if all(d == WITHIN for d in said) else NOT_DECIDED


def mode_verdict(decision: str | None, mode: PlainMode) -> str:
    """One allocator mode's verdict where a cell is judged mode by mode (plain_verdict): its held
    pairs' decision, and the cell's own pairs' (`decision`) where every one of them had both sides
    in this mode; two sets of pairs that disagree decide nothing between them."""
    mine = [mode.decision or NOT_DECIDED]
    if mode.lab_own and mode.lab_own == mode.lab_own_of and mode.plain_own and mode.plain_own == mode.plain_own_of:
        mine.append(decision or NOT_DECIDED)
    decided = {d for d in mine if d != NOT_DECIDED}
    return decided.pop() if len(decided) == 1 else NOT_DECIDED


@dataclass(frozen=True)
class HeldModes:
    """The two allocator modes measured on purpose, heap first, each with how many of the cell's
    own timed trials fell into it (stats.Mode.trials), and its own processes by mode where the
    trials say which process ran them."""

    heap: stats.Mode
    fresh: stats.Mode
    processes: OwnProcesses | None


def allocator_modes(trials: list[Trial], requests: int) -> tuple[HeldModes | None, str | None]:
    """The two allocator modes measured on purpose (trials of kind mode:heap and mode:fresh pages);
    or None and why the cell has one figure: the held processes' faults did not follow the
    tunables (the bodies do not come from glibc's malloc), or the two modes cost the same within
    their own spread (stats.same_within_spread: the held processes' trials' intervals overlap, or
    their difference is inside the spread of either), the figures said with it."""
    held = {m: [t for t in trials if t.kind == MODE_KIND + m and t.ok and t.wall_s and t.page_faults is not None]
            for m in (HEAP_MODE, FRESH_MODE)}
    if not requests or not all(held.values()):
        return None, None
    if any(mapped_anew(t.page_faults, requests, t.work_bytes or 0) for t in held[HEAP_MODE]) \
            or not all(mapped_anew(t.page_faults, requests, t.work_bytes or 0) for t in held[FRESH_MODE]):
        return None, ("one allocator mode: held in each by glibc's tunables, its processes took the same "
                      "pages for a body (its bodies do not come from glibc's malloc)")
    timed = [t for t in trials if t.kind == "timed" and t.ok and t.wall_s and t.page_faults is not None]
    fresh_own = sum(1 for t in timed if mapped_anew(t.page_faults, requests, t.work_bytes or 0))
    walls = {m: [(t.wall_s or 0.0) / requests for t in held[m]] for m in held}
    heap = stats.Mode(stats.median([t.wall_s or 0.0 for t in held[HEAP_MODE]]), len(timed) - fresh_own)
    fresh = stats.Mode(stats.median([t.wall_s or 0.0 for t in held[FRESH_MODE]]), fresh_own)
    if why := stats.same_within_spread(walls[HEAP_MODE], walls[FRESH_MODE]):
        return None, (f"one figure: bodies on the heap and bodies mapped anew cost the same within their spread "
                      f"({why}: heap {_span(walls[HEAP_MODE])}, fresh pages {_span(walls[FRESH_MODE])} µs a "
                      f"request, {len(walls[HEAP_MODE])} and {len(walls[FRESH_MODE])} trials held in each mode "
                      "on purpose)")
    return HeldModes(heap, fresh, own_processes(timed, requests)), None


def _span(seconds: list[float]) -> str:
    """A sample's median and its interval, in µs: '212 (208–219)'."""
    s = stats.summarize(seconds)
    return f"{s.median * 1e6:,.0f} ({s.ci_low * 1e6:,.0f}–{s.ci_high * 1e6:,.0f})"


def cell_figures(trials: list[Trial], metric: str, logical_requests: int, startup_s: float | None) -> CellFigures:
    """Throughput, CPU, memory and their statistics over the cell's timed trials."""
    timed = [t for t in trials if t.kind == "timed" and t.ok and t.wall_s]
    walls = [t.wall_s for t in timed]
    summary = stats.summarize(walls)
    work_bytes = stats.median([float(t.work_bytes or 0) for t in timed])
    unit = "MB/s" if metric == "bytes" else "req/s"
    # the trial whose wall time is the median carries the per-request figures
    middle = min(timed, key=lambda t: abs(t.wall_s - summary.median))
    rate = (lambda wall: work_bytes / wall / 1e6) if metric == "bytes" else (lambda wall: logical_requests / wall)
    held, _ = allocator_modes(trials, logical_requests)
    groups = _fault_modes(timed, logical_requests) or stats.modes(walls)
    if held is not None:
        # each allocator mode measured on purpose, heap first, with how many of the cell's own
        # trials and processes fell into it: both figures, whichever mode the cell's processes
        # happened to be in
        own = held.processes
        modes = tuple(Mode(rate(m.median), m.trials, label=label, cause="allocator",
                           processes=None if own is None else count, processes_of=None if own is None else own.told)
                      for m, label, count in ((held.heap, HEAP_MODE, own and own.heap),
                                              (held.fresh, FRESH_MODE, own and own.fresh)))
    else:
        modes = tuple(Mode(rate(m.median), m.trials) for m in groups) if groups else None
    return CellFigures(
        throughput=rate(summary.median),
        unit=unit,
        requests=logical_requests,
        work_bytes=work_bytes,
        wall_s=WallStats(
            median=summary.median, mean=summary.mean, stddev=summary.stddev, mad=summary.mad,
            min=summary.minimum, max=summary.maximum,
            ci_low=summary.ci_low, ci_high=summary.ci_high, ci_confidence=summary.ci_confidence,
        ),
        precision=summary.precision,
        relative_spread=summary.relative_spread,
        noisy=summary.noisy,
        outliers=tuple(summary.outliers),
        # fastest mode first: its throughput and how many trials fell in it
        modes=modes,
        trials=summary.n,
        cpu_user_s=stats.median([t.user_s or 0.0 for t in timed]),
        # the CPU's own repeatability: a claim on CPU is judged against it, not the wall time's
        cpu_precision=stats.summarize([(t.user_s or 0.0) + (t.sys_s or 0.0) for t in timed]).precision,
        cpu_sys_s=stats.median([t.sys_s or 0.0 for t in timed]),
        page_faults=(stats.median([float(t.page_faults) for t in timed if t.page_faults is not None])
                     if any(t.page_faults is not None for t in timed) else None),
        peak_rss_kb=int(stats.median([float(t.peak_rss_kb or 0) for t in timed])),
        setup_s=stats.median([t.setup_s or 0.0 for t in timed]),
        startup_s=startup_s,
        server=ServerSummary.from_json(middle.server) if middle.server is not None else None,
    )
