"""One cell in detail: every trial, and what the server saw the client do."""

from __future__ import annotations

from rich.table import Table


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value * 1000:,.1f}"


def _host(noise: dict) -> str:
    """The host probe before/after the trial (× the fastest seen on the driver's core)."""
    if "host_before" not in noise:
        return ""
    return f"{noise['host_before']:.2f}/{noise['host_after']:.2f}"


def trials_table(cell: dict, trials: list[dict]) -> Table:
    table = Table(title=f"{cell['driver']} × {cell['scenario']}: {cell['status']}"
                  + (f" — {cell['reason'].splitlines()[0]}" if cell.get("reason") else ""))
    for column in ("trial", "ok", "wall ms", "user ms", "sys ms", "peak MiB", "set-up ms", "conns",
                   "requests", "TLS full/resumed", "versions", "stalled", "cycle p50/p99 ms",
                   "server CPU ms", "steal/others ms", "host ×"):
        table.add_column(column, justify="right" if column not in ("trial", "versions") else "left")
    for t in trials:
        server = t.get("server") or {}
        tls = server.get("tls") or {}
        cycle = server.get("cycle_ms") or {}
        table.add_row(
            f"{t['kind']} {t['idx']}", "yes" if t["ok"] else "[red]no[/]", _ms(t.get("wall_s")),
            _ms(t.get("user_s")), _ms(t.get("sys_s")),
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
