"""A cell's figures as short texts, shared by the table and the long form."""

from __future__ import annotations

from clientlab.record import Cell, CellFigures, Mode

STATUS_LABEL = {"failed": "FAILED"}
# marks a driver that declares settings of its own (docs/driver-protocol.md §8)
DEPARTED = "†"
STATUS_STYLE = {"failed": "bold red", "unsupported": "yellow", "not-installed": "dim", "running": "cyan"}


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def throughput(f: CellFigures) -> str:
    """The median throughput, or both modes when the trials fell into two (fastest first, with
    their trial counts): a median between two modes is no figure the client ever had."""
    if f.modes:
        fast, slow = f.modes
        if fast.label:  # each allocator mode measured on purpose, with the cell's own processes in it
            return held_modes(fast, slow, f.unit)
        return f"two modes: {_number(fast.throughput)} ({fast.trials}) / {_number(slow.throughput)} " \
               f"({slow.trials}) {f.unit}"
    return f"{_number(f.throughput)} {f.unit}"


number = _number


def _processes(n: int) -> str:
    return f"{n} process{'' if n == 1 else 'es'}"


def held_modes(heap: Mode, fresh: Mode, unit: str) -> str:
    """'7,955 heap (2 of 3 processes) / 3,054 fresh pages (1 of 3 processes) req/s': each allocator
    mode's figure, held on purpose, and how many of the cell's own processes fell into it (a mode
    is a process's); a process whose trials changed mode is said after. A cell stored before its
    trials said which process ran them counts its trials instead, and says so."""
    if heap.processes_of and fresh.processes is not None and heap.processes is not None:
        of = heap.processes_of
        changed = of - heap.processes - fresh.processes
        text = (f"{_number(heap.throughput)} {heap.label} ({heap.processes} of {_processes(of)}) / "
                f"{_number(fresh.throughput)} {fresh.label} ({fresh.processes} of {_processes(of)}) {unit}")
        return text + (f", {_processes(changed)} changed mode mid-life" if changed else "")
    own = heap.trials + fresh.trials
    return (f"{_number(heap.throughput)} {heap.label} ({heap.trials} of {own} trials) / "
            f"{_number(fresh.throughput)} {fresh.label} ({fresh.trials} of {own} trials) {unit}")


def precision(f: CellFigures) -> str:
    if f.trials == 1:
        return "1 trial"  # one timed trial has no spread: "±0.0%" would claim a perfect one
    return "" if f.modes else f"±{f.precision * 100:.1f}%"


def spread(f: CellFigures) -> str:
    """The median's precision, where the median is the cell's figure: not for a cell whose own
    trials fell into two modes (each is shown instead), but for one whose allocator modes were
    measured beside its own processes' figure."""
    if f.trials == 1:
        return "1 trial"  # one timed trial has no spread: "±0.0%" would claim a perfect one
    return "" if f.modes and not f.modes[0].label else f"±{(f.precision or 0.0) * 100:.1f}%"


def count(f: CellFigures) -> str:
    """Requests per trial, and what the scenario asks when the lab scaled it to the trial budget."""
    n = f.requests
    full = f.scenario_requests
    text = f"n={n:,}" if n is not None else ""
    if n is not None and full and full != n:
        text += f" of {full:,}"
    return text


def cpu_per_request(f: CellFigures) -> str:
    """User + system CPU of the driver's tree per request (the timed phase's medians)."""
    seconds = f.cpu_per_request_s
    if seconds is None:
        return ""
    return f"CPU {seconds * 1e6:,.0f} µs/req" if seconds < 0.01 else f"CPU {seconds * 1e3:,.1f} ms/req"


def memory(f: CellFigures) -> str:
    return f"mem {f.peak_rss_kb / 1024:.1f} MiB"


def startup(f: CellFigures) -> str:
    """Process start to the first `ready`: reported apart from the timed figures."""
    s = f.startup_s
    if s is None:
        return ""
    return f"start {s * 1000:,.0f} ms" if s < 10 else f"start {s:,.1f} s"


BUDGET_CUT = "cut by time budget"


def flags(f: CellFigures, said_once: frozenset[str] = frozenset()) -> list[str]:
    """The cell's flags, less those said once for the whole table (`said_once`)."""
    # "noisy" is no flag of its own: the long form says where a spread changes a ranking (long.ties)
    out = []
    if f.disturbed_kept:
        out.append(f"{f.disturbed_kept} disturbed")
    if f.cut_by_budget:
        out.append(BUDGET_CUT)
    return [flag for flag in out if flag not in said_once]


def _cut(cells: list[Cell]) -> tuple[int, int]:
    """(measured cells cut by the time budget, measured cells)."""
    ok = [c.figures for c in cells if c.measured]
    return sum(1 for f in ok if f.cut_by_budget), len(ok)


def said_once(cells: list[Cell]) -> frozenset[str]:
    """The budget flag, when most measured cells carry it: then it is one line under the table
    instead of a word in nearly every cell."""
    cut, ok = _cut(cells)
    return frozenset({BUDGET_CUT}) if ok and cut > ok / 2 else frozenset()


ALLOCATOR_MODES = (
    "heap / fresh pages: a large body's memory stays on glibc's heap or is mapped anew from the kernel "
    "for every answer; each figure is a process held in that mode on purpose, and (k of n processes) "
    "counts the cell's own driver processes that fell into it (a mode is a process's, set early in its "
    "life; a process whose trials changed mode is said apart). What sets the mode in a user's program: glibc's mmap "
    "threshold, which rises to the largest block the process has freed, so a process that once freed "
    "a block larger than its bodies keeps them on the heap, and one whose body buffers only grew by "
    "steps past the body maps every body anew; MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ (or "
    "GLIBC_TUNABLES' glibc.malloc.mmap_threshold and trim_threshold) above the body size keep bodies "
    "on the heap (docs/measurement.md, \"Two modes of a large answer\")")


def allocator_modes_line(cells: list[Cell]) -> str | None:
    """What the two allocator figures mean and what sets the mode for a user's program, once under
    a table where a cell shows them; else None."""
    shown = any(c.measured and c.figures is not None and c.figures.modes and c.figures.modes[0].cause == "allocator"
                for c in cells)
    return ALLOCATOR_MODES if shown else None


def said_once_line(cells: list[Cell]) -> str | None:
    """'cut by time budget: 50 of 80 cells …' when `said_once` holds the flag, else None."""
    if BUDGET_CUT not in said_once(cells):
        return None
    cut, ok = _cut(cells)
    return (f"{BUDGET_CUT}: {cut} of {ok} cells stopped at their minimum of trials when the run's time "
            "was spent (their ± says what that left; --time-budget gives them more)")


def driver_label(cell: Cell) -> str:
    """The driver's id, marked when its figures come with declared departures."""
    return f"{cell.driver} {DEPARTED}" if cell.departures else cell.driver


def status_line(cell: Cell, width: int = 70) -> str:
    """'FAILED: reason' (first line, cut to `width`)."""
    label = STATUS_LABEL.get(cell.status, cell.status)
    reason = cell.reason.strip().splitlines()[0] if cell.reason and cell.reason.strip() else ""
    if len(reason) > width:
        reason = reason[: width - 1] + "…"
    return f"{label}: {reason}" if reason else label
