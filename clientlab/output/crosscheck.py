"""clientlab crosscheck's answer: each driver's ratio to the fastest under the bench server and
under nginx, how each server wrote its answers, and which ratios disagree."""

from __future__ import annotations

from rich.table import Table

from clientlab.selfcheck import crosscheck


def crosscheck_report(run_id: int, rows: list[crosscheck.Row], patterns: list) -> tuple[Table, list[str], list]:
    """(the table, the lines under it, the rows whose ratios disagree)."""
    table = Table(title=f"crosscheck (run {run_id}): each driver's throughput / the fastest's, per server")
    for column in ("scenario", "driver", "bench server", "nginx", "bench ÷ nginx", "ratio (bench)", "ratio (nginx)",
                   "differ"):
        table.add_column(column, overflow="fold")
    for r in rows:
        def rate(v: float | None, unit: str = r.unit) -> str:
            return f"{v:,.0f} {unit}" if v else "—"
        verdict = ("—" if r.agrees is None else
                   f"[green]{r.agreement:.1%}[/]" if r.agrees else f"[bold red]{r.agreement:.1%}[/]")
        table.add_row(r.scenario, r.driver, rate(r.bench), rate(r.nginx),
                      f"{r.bench_over_nginx:.2f}" if r.bench_over_nginx else "—",
                      f"{r.bench_ratio:.2f}" if r.bench_ratio else (r.reason or "—"),
                      f"{r.nginx_ratio:.2f}" if r.nginx_ratio else "—", verdict)
    lines = ["how each server wrote an answer (its send calls under strace, one keep-alive connection):"]
    for w in patterns:
        seen = w.problem or "; ".join(f"{'bench server' if server == 'bench' else server} {p.describe()}"
                                      for server, p in w.patterns.items())
        lines.append(f"  {w.scenario} ({w.path}): {seen}")
    judged = [r for r in rows if r.agrees is not None]
    failing = [r for r in judged if not r.agrees]
    lines.append(f"{len(judged) - len(failing)} of {len(judged)} ratios agree within {crosscheck.AGREEMENT:.0%}"
                 + (f"; not: {', '.join(f'{r.driver} × {r.scenario}' for r in failing)}" if failing else ""))
    slower = [r for r in rows if r.bench_over_nginx is not None and r.bench_over_nginx < 1 - crosscheck.SLOWER]
    compared = [r for r in rows if r.bench_over_nginx is not None]
    lines.append(f"the bench server gave {len(compared) - len(slower)} of {len(compared)} drivers at least nginx's "
                 f"rate (within {crosscheck.SLOWER:.0%})"
                 + (f"; slower for: {', '.join(f'{r.driver} × {r.scenario}' for r in slower)}" if slower else
                    ": where ratios disagree, nginx held the faster drivers back" if failing else ""))
    return table, lines, failing
