"""The calibration table: each cell's figure beside the same client's plain loop (crosscheck --bare)."""

from __future__ import annotations

from rich.table import Table

from clientlab.calibrate import TARGET, Calibration
from clientlab.stats import Summary, median

CAPTION = ("lab and bare: requests per second (median of the paired trials, ± half the CI of the median); "
           "lab ÷ bare: time per request, trial by trial (median and its CI); CPU: µs per request, "
           "the lab's from the cell's control group, the loop's from /proc (clock ticks)")


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
    lab = median([p.lab_cpu_s for p in cal.pairs]) * 1e6
    bare = median([p.bare.cpu_per_request_s for p in cal.pairs]) * 1e6
    return f"{lab:,.0f} / {bare:,.0f}"


def verdict(cal: Calibration) -> str:
    """Within the target, or how far the lab's figure is from the loop's; or why there is none."""
    if cal.lab is not None and cal.lab.status != "ok":
        return f"[red]cell {cal.lab.status}: {cal.lab.reason}[/]"
    if cal.problem:
        return f"[yellow]{cal.problem}[/]"
    r = cal.ratio_summary
    if r is None:
        return "—"
    if abs(r.median - 1) <= TARGET:
        return f"[green]within {TARGET:.0%}[/]"
    side = "slower" if r.median > 1 else "faster"
    why = cal.differences()
    return f"[bold red]lab {abs(r.median - 1):.0%} {side}[/]" + (f": {'; '.join(why)}" if why else "")


def calibration_table(cells: list[Calibration], title: str) -> Table:
    table = Table(title=title, caption=CAPTION)
    for column in ("scenario", "driver", "lab req/s", "bare req/s", "lab ÷ bare", "CPU lab / bare", "verdict"):
        table.add_column(column, overflow="fold")
    for c in cells:
        table.add_row(c.scenario, c.driver, rate(c.lab_summary), rate(c.bare_summary), ratio(c.ratio_summary),
                      cpu(c), verdict(c))
    return table
