"""The long form: per scenario, its drivers fastest first, each in one line on a wide terminal
and two on a narrow one (never wider than the terminal, never cut mid-word); the cells that were
not measured collapsed to a line per driver; and a summary per scenario in hyperfine's manner.
Readable on any terminal width and in a pipe (80 columns)."""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict

from rich.text import Text

from clientlab.output import cellfigures as cf
from clientlab.record import Cell

WIDE = 120          # a cell's figures fit one line from this width on
RATE_WIDTH = 16     # "48,494 req/s" or "1,006 MB/s" with room
NOT_MEASURED = ("unsupported", "not-installed")


def _rate(cell: Cell) -> float:
    return cell.figures.throughput if cell.measured and cell.figures.throughput else -1.0


def _interval(cell: Cell) -> tuple[float, float] | None:
    """The throughput's confidence interval (from the wall time's), or None when it has none."""
    f = cell.figures
    w = f.wall_s
    if not f.throughput or not w.median or not w.ci_low or not w.ci_high:
        return None
    return f.throughput * w.median / w.ci_high, f.throughput * w.median / w.ci_low


def _overlaps(a: Cell, b: Cell) -> bool:
    ia, ib = _interval(a), _interval(b)
    return ia is not None and ib is not None and ia[0] <= ib[1] and ib[0] <= ia[1]


def ties(ranked: list[Cell]) -> dict[str, list[str]]:
    """Per driver, its neighbours in the ranking whose confidence intervals overlap its own: the
    only place a cell's noise changes what the table says (which of the two is faster)."""
    out: dict[str, list[str]] = defaultdict(list)
    for a, b in zip(ranked, ranked[1:]):
        if not a.figures.modes and not b.figures.modes and _overlaps(a, b):
            out[a.driver].append(b.driver)
            out[b.driver].append(a.driver)
    return out


def _modes_text(cell: Cell) -> str | None:
    """Both modes of a cell that has two, for its second line."""
    return cf.throughput(cell.figures) if cell.figures.modes else None


def _first(cell: Cell, dw: int, best: float) -> Text:
    f = cell.figures
    line = Text(f"  {cf.driver_label(cell):<{dw}} ")
    rate = "two modes" if f.modes and not f.modes[0].label else f"{cf.number(f.throughput)} {f.unit}"
    line.append(f"{rate:>{RATE_WIDTH}}", style="bold")
    line.append(f" {cf.spread(f):>6}", style="dim")
    line.append(f" {_rate(cell) / best:6.2f}×" if best > 0 else "")
    line.append(f"  {cf.cpu_per_request(f)}")
    return line


def _details(cell: Cell, tie: list[str], quiet: frozenset[str]) -> list[str]:
    f = cell.figures
    parts = [p for p in (cf.count(f), cf.memory(f), cf.startup(f)) if p]
    if (modes := _modes_text(cell)) is not None:
        parts.insert(0, modes)
    parts += cf.flags(f, quiet)
    if tie:
        parts.append("level with " + " and ".join(tie) + " within the noise")
    return parts


def _wrapped(parts: list[str], indent: int, width: int) -> list[str]:
    """`parts` joined by two spaces into lines of at most `width`, each part kept on one line
    where it fits one, else wrapped at its own words."""
    lines, line = [], ""
    room = max(20, width - indent)
    for part in parts:
        if len(part) > room:
            if line:
                lines.append(line)
            *whole, line = textwrap.wrap(part, room, break_long_words=False, break_on_hyphens=False) or [""]
            lines += whole
            continue
        candidate = f"{line}  {part}" if line else part
        if line and len(candidate) > room:
            lines.append(line)
            line = part
        else:
            line = candidate
    if line:
        lines.append(line)
    return [" " * indent + ln for ln in lines]


def long_lines(cells: list[Cell], width: int = 80) -> list[Text]:
    """Per scenario: a heading, then each measured or failed driver, fastest first, with its
    ratio to the scenario's fastest: the figures on one line (wide) or two (narrow)."""
    lines: list[Text] = []
    scenarios = list(dict.fromkeys(c.scenario for c in cells))
    shown = [c for c in cells if c.status not in NOT_MEASURED]
    dw = min(max((len(cf.driver_label(c)) for c in shown), default=10), 24)
    quiet = cf.said_once(cells)
    for name in scenarios:
        mine = sorted((c for c in shown if c.scenario == name), key=_rate, reverse=True)
        if not mine:
            continue
        lines.append(Text(name, style="bold underline"))
        best = _rate(mine[0])
        tied = ties([c for c in mine if c.measured])
        for cell in mine:
            if not cell.measured:
                line = Text(f"  {cf.driver_label(cell):<{dw}} ")
                line.append(cf.status_line(cell, max(20, width - dw - 12)), style=cf.STATUS_STYLE.get(cell.status, ""))
                lines.append(line)
                continue
            first = _first(cell, dw, best)
            rest = _details(cell, tied.get(cell.driver, []), quiet)
            if width >= WIDE and len(first.plain) + 2 + len("  ".join(rest)) <= width:
                first.append("  " + "  ".join(rest), style="dim")
                lines.append(first)
                continue
            lines.append(first)
            lines += [Text(ln, style="dim") for ln in _wrapped(rest, dw + 3, width)]
    lines += not_measured_lines(cells, width)
    return lines


def not_measured_lines(cells: list[Cell], width: int = 80) -> list[Text]:
    """Each driver that was not measured somewhere: on how many scenarios, and why (each reason
    once), instead of a line per cell."""
    by_driver: dict[str, list[Cell]] = defaultdict(list)
    for c in cells:
        if c.status in NOT_MEASURED:
            by_driver[c.driver].append(c)
    if not by_driver:
        return []
    scenarios = len(dict.fromkeys(c.scenario for c in cells))
    lines = [Text("Not measured", style="bold underline")]
    for driver, mine in by_driver.items():
        reasons: dict[str, list[str]] = defaultdict(list)
        for c in mine:
            reasons[cf.status_line(c, 200)].append(c.scenario)
        for reason, where in reasons.items():
            scope = f"{len(where)} of {scenarios} scenarios" if len(where) > 1 else where[0]
            text = f"{cf.driver_label(mine[0])} ({scope}): {reason}"
            style = cf.STATUS_STYLE.get(mine[0].status, "")
            lines += [Text(ln, style=style) for ln in textwrap.wrap(text, width, initial_indent="  ",
                                                                     subsequent_indent="    ", break_long_words=False,
                                                                     break_on_hyphens=False)]
    return lines


def summary_lines(cells: list[Cell], width: int = 80) -> list[Text]:
    """Per scenario, in hyperfine's manner: the fastest driver, and how many times faster it ran
    than each other, with the ratio's uncertainty (the two medians' precisions combined)."""
    lines: list[Text] = []
    for name in dict.fromkeys(c.scenario for c in cells):
        ranked = sorted((c for c in cells if c.scenario == name and c.measured and _rate(c) > 0),
                        key=_rate, reverse=True)
        if len(ranked) < 2:
            continue
        best = ranked[0]
        lines.append(Text.assemble((f"{name}: ", "bold"), (best.driver, "bold cyan"), " ran"))
        for other in ranked[1:]:
            ratio = _rate(best) / _rate(other)
            spread = ratio * math.hypot(best.figures.precision or 0.0, other.figures.precision or 0.0)
            lines.append(Text(f"  {ratio:8.2f} ± {spread:.2f} times faster than {other.driver}"))
    if lines:
        lines.insert(0, Text("Summary", style="bold underline"))
    return lines
