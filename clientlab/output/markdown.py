"""The run as Markdown: per scenario a table of its drivers, fastest first, for an issue, a pull
request or a wiki page."""

from __future__ import annotations

from clientlab.output import cellfigures as cf
from clientlab.output.long import NOT_MEASURED, not_measured_lines, summary_lines
from clientlab.record import Cell


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_text(cells: list[Cell], title: str) -> str:
    lines = [f"**{_escape(title)}**", ""]
    for name in dict.fromkeys(c.scenario for c in cells):
        mine = [c for c in cells if c.scenario == name and c.status not in NOT_MEASURED]
        if not mine:
            continue
        ranked = sorted(mine, key=lambda c: c.figures.throughput if c.measured else -1.0, reverse=True)
        best = ranked[0].figures.throughput if ranked[0].measured else 0.0
        lines += [f"### {name}", "", "| driver | throughput | ± | × fastest | CPU a request | peak memory |",
                  "|---|---:|---:|---:|---:|---:|"]
        for c in ranked:
            if not c.measured:
                lines.append(f"| {_escape(cf.driver_label(c))} | {_escape(cf.status_line(c, 120))} | | | | |")
                continue
            f = c.figures
            ratio = f"{f.throughput / best:.2f}×" if best else ""
            lines.append(f"| {_escape(cf.driver_label(c))} | {_escape(cf.throughput(f))} | {cf.spread(f)} | {ratio} | "
                         f"{cf.cpu_per_request(f).removeprefix('CPU ')} | {cf.memory(f).removeprefix('mem ')} |")
        lines.append("")
    missing = not_measured_lines(cells, width=1000)
    if missing:
        lines += ["### Not measured", ""] + [f"- {_escape(line.plain.strip())}" for line in missing[1:]] + [""]
    summary = summary_lines(cells)
    if summary:
        lines += ["### Summary", ""] + ["    " + line.plain for line in summary[1:]] + [""]
    return "\n".join(lines) + "\n"
