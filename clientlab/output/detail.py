"""One cell in detail: every trial, and what the server saw the client do."""

from __future__ import annotations

from rich.table import Table

from clientlab.record import Cell


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value * 1000:,.1f}"


def _host(noise: dict) -> str:
    """The host probe before/after the trial (× the fastest seen on the driver's core)."""
    if "host_before" not in noise:
        return ""
    return f"{noise['host_before']:.2f}/{noise['host_after']:.2f}"


def _per_request(faults: int | None, wakeups: int | None, requests: int | None) -> str:
    """Page faults and wake-ups a request: faults near 0 when bodies stay on the heap, a page per
    4 KB of body when mapped anew; wake-ups near 0 when answers wait whole in the socket buffer."""
    if faults is None or wakeups is None or not requests:
        return ""
    return f"{faults / requests:.1f}/{wakeups / requests:.2f}"


def trials_table(cell: Cell, trials: list[dict]) -> Table:
    table = Table(title=f"{cell.driver} × {cell.scenario}: {cell.status}"
                  + (f" — {cell.reason.splitlines()[0]}" if cell.reason else ""))
    for column in ("trial", "ok", "wall ms", "user ms", "sys ms", "faults/wake-ups a req", "peak MiB", "set-up ms", "conns",
                   "requests", "TLS full/resumed", "versions", "stalled", "cycle p50/p99 ms",
                   "server CPU ms", "steal/others ms", "host ×"):
        # the trial's name and the versions stay whole where a narrow terminal squeezes the rest
        table.add_column(column, justify="right" if column not in ("trial", "versions") else "left",
                         min_width={"trial": 10, "versions": 11}.get(column))
    for t in trials:
        server = t.get("server") or {}
        tls = server.get("tls") or {}
        cycle = server.get("cycle_ms") or {}
        table.add_row(
            f"{t['kind']} {t['idx']}", "yes" if t["ok"] else "[red]no[/]", _ms(t.get("wall_s")),
            _ms(t.get("user_s")), _ms(t.get("sys_s")), _per_request(t.get("page_faults"), t.get("wakeups"), server.get("requests")),
            f"{t['peak_rss_kb'] / 1024:.1f}" if t.get("peak_rss_kb") else "", _ms(t.get("setup_s")),
            str(server.get("connections", "")), str(server.get("requests", "")),
            f"{tls.get('full', 0)}/{tls.get('resumed', 0)}" if tls else "",
            ", ".join(f"{k} {v}" for k, v in (server.get("versions") or {}).items()),
            str(server.get("stalled_requests", "")),
            f"{cycle['p50']:.2f}/{cycle['p99']:.2f}" if cycle else "",
            _ms(server.get("cpu_s")),
            f"{t['noise']['steal_s'] * 1000:.0f}/{t['noise']['other_cpu_s'] * 1000:.0f}" if t.get("noise") else "",
            _host(t.get("noise") or {}),
        )
    for t in trials:
        for problem in t.get("problems") or []:
            table.caption = (table.caption or "") + f"\n{t['kind']} {t['idx']}: {problem}"
    return table
