"""clientlab selfbench's answer, drawn from its figures (the JSON it writes): the bench server
against nginx point by point, then the lab's own figures, each beside its target."""

from __future__ import annotations

from rich.table import Table

from clientlab.selfcheck.selfbench import H2_STREAMS

NGINX_COLUMNS = ("load", "conns", "clientlab req/s", "nginx req/s", "ratio", "MB/s (clientlab / nginx)",
                 "CPU µs/req (clientlab / nginx)")


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def nginx_report(figures: dict) -> tuple[Table, list[str]]:
    """(the table of the measurement points, the lines under it: nginx missing, the limits raised)."""
    side, target = figures["against_nginx"], figures["targets"]["server_to_nginx_at_least"]
    table = Table(title=f"bench server against nginx {side.get('nginx') or ''} (one worker), same core; "
                        f"GET {side['path']}; medians of {side['repeats']} × {side['seconds']} s (min–max)")
    # fold, never cut: a figure stays whole however narrow the console
    for column in (*NGINX_COLUMNS, f"target ≥ {target:.1f}×"):
        table.add_column(column, justify="left" if column == "load" else "right", overflow="fold")
    for kind, label in (("h1", "wrk, HTTP/1.1 keep-alive"), ("h2", f"h2load, h2 TLS × {H2_STREAMS} streams")):
        for row in side[kind]:
            a, b = row["clientlab"], row.get("nginx")
            table.add_row(
                label, f"{row['connections']:,}",
                f"{a['requests_per_s']:,.0f} ({a['min']:,.0f}–{a['max']:,.0f})",
                f"{b['requests_per_s']:,.0f} ({b['min']:,.0f}–{b['max']:,.0f})" if b else "–",
                f"{row['ratio']:.2f}×" if "ratio" in row else "–",
                f"{a['mb_per_s']:,.0f} / {b['mb_per_s']:,.0f}" if b else f"{a['mb_per_s']:,.0f}",
                f"{a['cpu_us_per_request']:.1f} / {b['cpu_us_per_request']:.1f}" if b else f"{a['cpu_us_per_request']:.1f}",
                _verdict(row["met"]) if "met" in row else "no nginx",
            )
    lines = []
    if side.get("nginx_missing"):
        lines.append(f"  nginx: {side['nginx_missing']}")
    if side["limits"]:
        lines.append(f"  limits raised for the run (restored after): {side['limits']}")
    return table, lines


def figures_report(figures: dict) -> tuple[Table, list[str]]:
    """(the table of the lab's own figures, the lines under it: the driver cells that did not measure)."""
    table = Table(title="clientlab selfbench (one run, medians)")
    table.add_column("figure", overflow="fold")
    table.add_column("value", justify="right", overflow="fold")
    table.add_column("target", overflow="fold")
    _server_rows(table, figures)
    _lab_rows(table, figures)
    _placement_rows(table, figures["placements"])
    lines = [f"  {r['driver']} {r['scenario']}: {r['status']} {r['reason'] or ''}"
             for r in figures["drivers"] if r["status"] not in ("ok", "unsupported")]
    return table, lines


def _server_rows(table: Table, figures: dict) -> None:
    """Idle-connection memory, and the bench server against the fastest and the cheapest drivers."""
    targets = figures["targets"]
    for name, idle in figures["against_nginx"].get("idle", {}).items():
        per = idle["bytes_per_connection"]
        table.add_row(f"{name}: memory per idle keep-alive connection ({idle['connections']:,} open)",
                      f"{per:,.0f} B" if per is not None else "–",
                      f"RSS {idle['rss_before'] / 1e6:.1f} → {idle['rss_with'] / 1e6:.1f} MB; "
                      f"{'still serving' if idle['still_serving'] else 'NOT serving'}")
    if figures["server_ceiling"]:
        table.add_row("bench server ceiling (best wrk point above)", f"{figures['server_ceiling']:,.0f} req/s", "")
    at_least = targets["server_to_fastest_at_least"]
    for key, kind, scenario_name in (("fastest", "sequential", "get-small"),
                                     ("fastest_parallel", "parallel", "parallel-feeds")):
        if fastest := figures[key]:
            ratio = figures[f"server_to_{key}"]
            table.add_row(f"fastest {kind} driver, {scenario_name} ({fastest['driver']})",
                          f"{fastest['requests_per_s']:,.0f} req/s", "")
            table.add_row(f"server / fastest {kind} driver", f"{ratio:.1f}×",
                          f"≥ {at_least:.0f}× ({_verdict(ratio >= at_least)})")
    if cheapest := figures["cheapest_driver_cpu"]:
        share, at_most = figures["server_cpu_share"], targets["server_cpu_share_at_most"]
        table.add_row(f"server CPU per request / cheapest driver's ({cheapest['driver']}, {cheapest['scenario']})",
                      f"{cheapest['server_cpu_us_per_request']:.1f} / {cheapest['driver_cpu_us_per_request']:.1f} µs "
                      f"= {share:.2f}",
                      f"≤ {at_most:.2f} ({_verdict(share <= at_most)})")


def _lab_rows(table: Table, figures: dict) -> None:
    """The lab's overhead on a trial, the machine's noise floor and the host's slow phases."""
    overhead, floor, phases = figures["overhead"], figures["noise_floor"], figures["host_phases"]
    below = figures["targets"]["overhead_below"]
    table.add_row("lab overhead on a 1 s trial (wall)", f"{overhead['overhead'] * 100:.3f} %",
                  f"< {below * 100:.0f} % ({_verdict(overhead['overhead'] < below)})")
    table.add_row("lab's own CPU during a 1 s trial", f"{overhead['lab_cpu_fraction'] * 100:.2f} % of a core", "")
    table.add_row("spread of ten 1 s sleep trials (CV)", f"{overhead['cv'] * 100:.3f} %", "")
    table.add_row("noise floor: fixed CPU work, ten times (CV; max/min)",
                  f"{floor['cv'] * 100:.2f} %; {floor['max_over_min']:.3f}×",
                  f"steal {floor['steal_s'] * 1000:.0f} ms, others {floor['other_cpu_s'] * 1000:.0f} ms meanwhile")
    if phases:
        table.add_row("host slow phases on the driver's core (kernel round trips, 20 s)",
                      f"{phases['slow_share'] * 100:.0f} % of the time"
                      + (f", {phases['slow_median']:.2f}× in them" if phases["slow_median"] else ""),
                      f"{phases['phases']} phases, the longest {phases['longest_s']:.2f} s "
                      f"(best round trip {phases['best_ns'] / 1000:.1f} µs)")


def _placement_rows(table: Table, placed: dict) -> None:
    """Per-request time and spread of one driver under each placement; the most repeatable marked."""
    for name, p in placed["placements"].items():
        if "us_per_request" not in p:
            table.add_row(f"placement {name}", p["status"], p.get("reason") or "")
            continue
        best_mark = " (most repeatable)" if name == placed["most_repeatable"] else ""
        table.add_row(f"placement {name}: {placed['driver']} get-small",
                      f"{p['us_per_request']:,.1f} µs/req ±{p['relative_spread'] * 100:.1f} %",
                      f"max/min {p['max_over_min']:.3f}×, {p['disturbed']} disturbed{best_mark}")
