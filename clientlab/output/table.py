"""The side-by-side table: rows are drivers, columns are scenarios."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

STATUS_STYLE = {"failed": "bold red", "unsupported": "yellow", "not-installed": "dim", "running": "cyan"}
REASON_WIDTH = 70


def _short(reason: str | None) -> str:
    line = (reason or "").strip().splitlines()[0] if reason else ""
    return line if len(line) <= REASON_WIDTH else line[: REASON_WIDTH - 1] + "…"


def cell_text(cell: dict) -> Text:
    """One cell: throughput ± precision, CPU user+sys, peak RSS; or the status and why."""
    status = cell["status"]
    if status != "ok":
        label = "FAILED" if status == "failed" else status
        return Text(f"{label}: {_short(cell['reason'])}", style=STATUS_STYLE.get(status, ""))
    f = cell["figures"]
    unit = f["unit"]
    value = f"{f['throughput']:,.0f}" if f["throughput"] >= 100 else f"{f['throughput']:.3g}"
    text = Text(f"{value} {unit}", style="bold")
    text.append(f" ±{f['precision'] * 100:.1f}%", style="dim")
    if f.get("noisy"):
        text.append(" noisy", style="magenta")
    text.append(f"\nCPU {f['cpu_user_s']:.2f}+{f['cpu_sys_s']:.2f} s")
    text.append(f"\nRSS {f['peak_rss_kb'] / 1024:.1f} MiB")
    return text


def results_table(cells: list[dict], title: str) -> Table:
    drivers = list(dict.fromkeys(c["driver"] for c in cells))
    scenarios = list(dict.fromkeys(c["scenario"] for c in cells))
    by_key = {(c["driver"], c["scenario"]): c for c in cells}
    table = Table(title=title, show_lines=True, caption="req/s or MB/s (median; ± half the CI of the median), "
                  "CPU user+system of the timed phase, peak RSS of the driver's process tree")
    table.add_column("driver", style="bold")
    for name in scenarios:
        table.add_column(name, overflow="fold")
    for driver in drivers:
        row = [driver]
        for name in scenarios:
            cell = by_key.get((driver, name))
            row.append(cell_text(cell) if cell else Text("—", style="dim"))
        table.add_row(*row)
    return table
