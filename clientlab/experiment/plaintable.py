"""An experiment whose cells ran beside their library's plain loop (`beside = "plain"`: truth),
as one table: each driver a row, each part the plain loop's rate, the lab's and lab ÷ plain with
their spreads, both allocator modes unless the cell's two cost the same within their own spread
on each side (each with how many of its side's processes fell into it), and each miss with its
cause.

The texts are built here once, for the findings document and the terminal alike; the verdict
per cell is the check's own (PlainCheck.decision), mode by mode where the cell's allocator modes
cost apart (figures.plain_verdict).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clientlab.analysis import stats
from clientlab.analysis.figures import FRESH_MODE, modes_alike, own_processes, plain_verdict
from clientlab.experiment.spec import Experiment
from clientlab.record import Cell, PlainCheck, PlainMode
from clientlab.store import Store, Trial

OFF, NOT_DECIDED = "off", "not decided"


@dataclass(frozen=True)
class Entry:
    """One cell: the plain loop's rate, the lab's and lab ÷ plain, each with a line per allocator
    mode where the cell has two; or why it has none (`missing`)."""

    plain: str = ""
    lab: str = ""
    ratio: str = ""
    plain_modes: str | None = None
    lab_modes: str | None = None
    ratio_modes: str | None = None
    missing: str | None = None

    def columns(self, newline: str) -> tuple[str, str, str]:
        """Its three texts (plain, lab, lab ÷ plain), each with its modes after `newline`; for a
        cell without a plain-loop figure, the lab's rate and why."""
        if self.missing is not None:
            return "", self.lab, self.missing
        return tuple(text + (f"{newline}{modes}" if modes else "") for text, modes in (  # type: ignore[return-value]
            (self.plain, self.plain_modes), (self.lab, self.lab_modes), (self.ratio, self.ratio_modes)))


@dataclass(frozen=True)
class Miss:
    """A cell off its plain loop, and what is known of why."""

    driver: str
    part: str
    ratio: str
    causes: tuple[str, ...]


@dataclass
class PlainTable:
    parts: list[str]
    rows: dict[str, dict[str, Entry]] = field(default_factory=dict)   # driver → part → entry
    misses: list[Miss] = field(default_factory=list)
    not_decided: list[str] = field(default_factory=list)               # "driver × part"

    def row(self, driver: str, newline: str) -> list[str]:
        """A driver's texts, three a part (Entry.columns), empty where it has no cell."""
        by_part = self.rows[driver]
        return [text for part in self.parts
                for text in (by_part[part].columns(newline) if part in by_part else ("", "", ""))]


def _rate(seconds: float | None, precision: float | None = None) -> str:
    if not seconds:
        return "—"
    return f"{1 / seconds:,.0f}" + (f" ±{precision:.0%}" if precision is not None else "")


def _interval(r: float, low: float | None, high: float | None) -> str:
    return f"{r:.2f} ({low:.2f}–{high:.2f})" if low is not None and high is not None else f"{r:.2f}"


def _count(count: int | None, of: int | None, what: str) -> str:
    """' (2 of 3 processes)', or nothing where the count is not known."""
    if count is None or not of:
        return ""
    return f" ({count} of {of} {what if of != 1 else {'processes': 'process', 'trials': 'trial'}[what]})"


def _lab_own(m: PlainMode) -> str:
    """How many of the lab's own processes (or, where its trials did not say which process ran
    them, of its trials) fell into the mode: a mode is a process's."""
    if m.lab_processes is not None and m.lab_processes_of:
        return _count(m.lab_processes, m.lab_processes_of, "processes")
    return _count(m.lab_own, m.lab_own_of, "trials")


def _changed(modes: tuple[PlainMode, ...]) -> str:
    """', 1 process changed mode mid-life' where one of the lab's processes did."""
    counted = [m.lab_processes for m in modes if m.lab_processes is not None]
    of = modes[0].lab_processes_of
    if len(counted) != 2 or not of or of == sum(counted):
        return ""
    n = of - sum(counted)
    return f", {n} process{'' if n == 1 else 'es'} changed mode mid-life"


def entry(cell: Cell) -> Entry:
    """One cell's texts (Entry)."""
    if not cell.measured:
        return Entry(missing=f"{cell.status}" + (f": {cell.reason.splitlines()[0]}" if cell.reason else ""))
    p: PlainCheck | None = cell.figures.plain
    if p is None or p.ratio is None:
        return Entry(lab=f"{cell.figures.throughput:,.0f}" if cell.figures.throughput else "—",
                     missing=f"no plain-loop figure: {(p and p.problem) or 'none was run'}")
    decision = p.decision or NOT_DECIDED
    # one pair has no spread: "±0%" would claim a perfect one
    spread = p.compared > 1
    out = Entry(plain=_rate(p.plain_s_per_request, p.plain_precision if spread else None),
                lab=_rate(p.lab_s_per_request, p.lab_precision if spread else None),
                ratio=f"{_interval(p.ratio, p.ratio_ci_low, p.ratio_ci_high)} {decision}, {p.compared} "
                      f"pair{'' if p.compared == 1 else 's'}")
    modes = tuple(m for m in p.modes if m.ratio is not None)
    if len(modes) != 2:
        return out
    lab_alike, plain_alike = modes_alike(modes, "lab"), modes_alike(modes, "plain")
    if lab_alike and plain_alike:
        return Entry(out.plain, out.lab, out.ratio,
                     ratio_modes=f"one figure: both allocator modes cost the same within their spread on each "
                                 f"side (lab: {lab_alike}; plain: {plain_alike})")
    # two figures: the cell is judged mode by mode (plain_verdict); its other pairs compare the
    # modes each side's process fell into and carry no verdict of their own
    verdict = plain_verdict(p.decision, p.modes)
    ratio = (f"{_interval(p.ratio, p.ratio_ci_low, p.ratio_ci_high)} over {p.compared} pair"
             f"{'' if p.compared == 1 else 's'} in the modes they fell into; {verdict} by its two modes")
    # the loop's rounds are fresh processes each: its counts are processes
    return Entry(out.plain, out.lab, ratio,
                 plain_modes=" / ".join(f"{_rate(m.plain_s_per_request)} {m.mode}"
                                        f"{_count(m.plain_own, m.plain_own_of, 'processes')}" for m in modes),
                 lab_modes=" / ".join(f"{_rate(m.lab_s_per_request)} {m.mode}{_lab_own(m)}" for m in modes)
                 + _changed(modes),
                 ratio_modes=" / ".join(f"{m.mode} {_interval(m.ratio or 0.0, m.ratio_ci_low, m.ratio_ci_high)} "
                                        f"{m.decision or NOT_DECIDED}, {m.pairs} held pair{'' if m.pairs == 1 else 's'}"
                                        for m in modes))


def causes(cell: Cell) -> tuple[str, ...]:
    """What is known of why a cell is off its loop: the manifest's known cause (plain_notes), what
    its pairs' two sides did differently, the diagnosis's warnings; or that none was found."""
    p = cell.figures.plain
    found = []
    if p is not None and p.note:
        found.append(f"known cause: {p.note}")
    if p is not None and p.differences:
        found.append("the two sides differed: " + "; ".join(p.differences))
    found += [f"diagnosis: {f.title}" for f in cell.figures.findings if f.severity == "warn"]
    return tuple(found) or ("cause not found",)


def stored_cells(store: Store, run_id: int) -> list[Cell]:
    """The run's cells, each plain check's modes given the lab's process counts where the run
    stored none (its trials did not say which process ran them) but the store still tells: a
    cell whose timed trials all ran in one process (`processes` 1: the truth experiment keeps one
    process a cell) had that process in the mode of its trials, by their page faults (figures.own_processes);
    a cell of several processes stays counted by its trials."""
    out = []
    for cell in store.cell_records(run_id):
        p = cell.figures.plain if cell.measured else None
        if (p is None or len(p.modes) != 2 or any(m.lab_processes is not None for m in p.modes)
                or cell.figures.processes != 1 or cell.id is None or not cell.figures.requests):
            out.append(cell)
            continue
        timed = [Trial(kind=t["kind"], idx=t["idx"], ok=t["ok"], wall_s=t["wall_s"], work_bytes=t["work_bytes"],
                       page_faults=t["page_faults"], process=0 if t["process"] is None else t["process"])
                 for t in store.trials(cell.id) if t["kind"] == "timed" and t["ok"] and t["wall_s"]]
        own = own_processes(timed, cell.figures.requests)
        if own is None:
            out.append(cell)
            continue
        modes = tuple(m.with_(lab_processes=own.fresh if m.mode == FRESH_MODE else own.heap,
                              lab_processes_of=own.told) for m in p.modes)
        out.append(cell.with_(figures=cell.figures.with_(plain=p.with_(modes=modes))))
    return out


def plain_table(experiment: Experiment, cells: list[Cell]) -> PlainTable:
    """Every driver of the experiment's parts beside its plain loop, part by part."""
    table = PlainTable([p.name for p in experiment.parts])
    for part in experiment.parts:
        for c in (c for c in cells if c.params.get("part") == part.name):
            e = entry(c)
            table.rows.setdefault(c.driver, {})[part.name] = e
            p = c.figures.plain if c.measured else None
            decision = plain_verdict(p.decision, p.modes) if p is not None and p.ratio is not None else None
            if decision == OFF:
                table.misses.append(Miss(c.driver, part.name, e.ratio, causes(c)))
            elif e.missing is None and decision != "within":
                table.not_decided.append(f"{c.driver} × {part.name}")
    return table
