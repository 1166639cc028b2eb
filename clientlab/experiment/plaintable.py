"""An experiment whose cells ran beside their library's plain loop (`beside = "plain"`: truth),
as one table: each driver a row, each part the plain loop's rate, the lab's and lab ÷ plain with
their spreads, both allocator modes where the cell's two cost apart, and each miss with its cause.

The texts are built here once, for the findings document and the terminal alike; the verdict
per cell is the check's own (PlainCheck.decision).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clientlab.experiment.spec import Experiment
from clientlab.record import Cell, PlainCheck, PlainMode

OFF, NOT_DECIDED = "off", "not decided"
MODES_APART = 1.10   # two allocator modes are two figures only when they cost this much apart (figures.py)


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


def _own(count: int | None, of: int | None) -> str:
    return f" ({count} of {of})" if count is not None and of else ""


def _apart(modes: tuple[PlainMode, ...], side: str) -> bool:
    rates = [getattr(m, f"{side}_s_per_request") for m in modes]
    rates = [r for r in rates if r]
    return len(rates) == 2 and max(rates) >= MODES_APART * min(rates)


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
    if len(modes) == 2 and (_apart(modes, "lab") or _apart(modes, "plain")):
        out = Entry(out.plain, out.lab, out.ratio,
                    plain_modes=" / ".join(f"{_rate(m.plain_s_per_request)} {m.mode}{_own(m.plain_own, m.plain_own_of)}"
                                           for m in modes),
                    lab_modes=" / ".join(f"{_rate(m.lab_s_per_request)} {m.mode}{_own(m.lab_own, m.lab_own_of)}"
                                         for m in modes),
                    ratio_modes=" / ".join(f"{m.mode} {_interval(m.ratio or 0.0, m.ratio_ci_low, m.ratio_ci_high)} "
                                           f"{m.decision or NOT_DECIDED}" for m in modes))
    elif len(modes) == 2:
        out = Entry(out.plain, out.lab, out.ratio, ratio_modes=f"one figure: both allocator modes within "
                                                               f"{MODES_APART - 1:.0%} on each side")
    return out


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


def plain_table(experiment: Experiment, cells: list[Cell]) -> PlainTable:
    """Every driver of the experiment's parts beside its plain loop, part by part."""
    table = PlainTable([p.name for p in experiment.parts])
    for part in experiment.parts:
        for c in (c for c in cells if c.params.get("part") == part.name):
            e = entry(c)
            table.rows.setdefault(c.driver, {})[part.name] = e
            decision = c.figures.plain.decision if c.measured and c.figures.plain is not None else None
            if decision == OFF:
                table.misses.append(Miss(c.driver, part.name, e.ratio, causes(c)))
            elif e.missing is None and decision != "within":
                table.not_decided.append(f"{c.driver} × {part.name}")
    return table
