"""The calibration table: each cell's figure beside a loop of the same client: the driver's own
request path in a loop (crosscheck --bare) or the library's own plain loop (crosscheck --plain)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from clientlab.analysis.stats import Summary, median
from clientlab.selfcheck.calibrate import TARGET, Calibration

CAPTIONS = {
    "bare": ("lab and bare: requests per second (median of the compared pairs, ± half the CI of the median); "
             "lab ÷ bare: time per request, trial by trial (median and its CI); CPU µs: a request's, "
             "lab/bare (the lab's from the cell's control group, the loop's from /proc in clock ticks). "
             "A pair whose sides were in two modes of a large answer (docs/measurement.md) is left out "
             "when three or more were in one, and the note says so"),
    "plain": ("lab and plain: requests per second (median of the compared pairs, ± half the CI of the median); "
              "plain: the library's own loop (plain.<ext> in the driver's folder), a fresh process each "
              "round, timed by its own clock; lab ÷ plain: time per request, trial by trial (median and "
              "its CI); CPU µs: a request's, lab/plain (the plain loop's from the kernel's account of its "
              "process less its start-up; none for a JIT runtime, whose warm-up's cost varies). A pair "
              "whose sides were in two modes of a large answer (docs/measurement.md) is left out when "
              "three or more were in one, and the note says so"),
}


def rate(summary: Summary | None) -> str:
    """Requests per second from seconds per request, with the median's precision."""
    if summary is None or summary.median <= 0:
        return "—"
    return f"{1 / summary.median:,.0f} ±{summary.precision:.0%}"


def ratio(summary: Summary | None) -> str:
    if summary is None:
        return "—"
    return f"{summary.median:.2f} ({summary.ci_low:.2f}–{summary.ci_high:.2f})"


def cpu(cal: Calibration) -> str:
    if not cal.pairs:
        return "—"
    lab = median([p.lab_cpu_s for p in cal.compared]) * 1e6
    loop = [c for p in cal.compared if (c := p.bare.cpu_per_request_s) is not None]
    return f"{lab:,.0f}/{median(loop) * 1e6:,.0f}" if loop else f"{lab:,.0f}/—"


def verdict(cal: Calibration) -> str | None:
    """Why a cell has no ratio, or how far its figure is from the loop's and what its trials did
    differently; None within the target."""
    if cal.lab is not None and cal.lab.status != "ok":
        return f"[red]cell {cal.lab.status}: {cal.lab.reason}[/]"
    if cal.problem:
        return f"[yellow]{cal.problem}[/]"
    r = cal.ratio_summary
    if r is None:
        return None
    why = cal.differences()
    if abs(r.median - 1) <= TARGET:
        # within the target; pairs left out are still said
        return f"within {TARGET:.0%}: {'; '.join(why)}" if len(cal.compared) < len(cal.pairs) else None
    side = "slower" if r.median > 1 else "faster"
    return f"lab {abs(r.median - 1):.0%} {side}" + (f": {'; '.join(why)}" if why else "")


def calibration_table(cells: list[Calibration], title: str) -> tuple[Table, list[str]]:
    """The table, a section per scenario, the ratio green within the target and red past it; and
    a note per cell that missed it, has no ratio, or had pairs left out (kept out of the table:
    it stays narrow)."""
    reference = cells[0].reference if cells else "bare"
    table = Table(title=title, caption=CAPTIONS[reference])
    table.add_column("driver", no_wrap=True)
    for column in ("lab req/s", f"{reference} req/s", f"lab ÷ {reference}", "CPU µs"):
        table.add_column(column, justify="right")
    notes = []
    for i, c in enumerate(cells):
        if i == 0 or c.scenario != cells[i - 1].scenario:
            if i:
                table.add_section()
            table.add_row(f"[bold]{escape(c.scenario)}[/]")  # get-small[timeout_s=5.0] is not markup
        within = c.within_target
        style = "" if within is None else "green" if within else "bold red"
        shown = ratio(c.ratio_summary)
        table.add_row(c.driver, rate(c.lab_summary), rate(c.bare_summary),
                      f"[{style}]{shown}[/]" if style else shown, cpu(c))
        why = "; ".join(w for w in (verdict(c), c.rounds_note()) if w)
        if why:
            notes.append(f"{c.driver} × {escape(c.scenario)}: {why}")
    return table, notes
