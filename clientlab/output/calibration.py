"""The calibration table: each cell's figure beside a loop of the same client: the driver's own
request path in a loop (crosscheck --bare) or the library's own plain loop (crosscheck --plain)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from clientlab.analysis.figures import FRESH_MODE, two_figures
from clientlab.analysis.stats import Summary, median, summarize
from clientlab.selfcheck.calibrate import DECIDE_CONFIDENCE, NOT_DECIDED, OFF, TARGET, WITHIN, Calibration, Verdicts

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
              "process less its start-up; none for a JIT runtime, whose warm-up's cost varies); pairs: "
              "how many, and the verdict: within (the CI inside 0.90–1.10 at 90 % coverage or more), off "
              "(wholly outside) or not decided. A pair whose sides were in two modes of a large answer "
              "(docs/measurement.md) is left out when three or more were in one, and the note says so; "
              "a large answer is also measured with both sides held in each allocator mode"),
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
    said = cal.verdict
    if cal.reference == "plain" and two_figures(cal.mode_figures()):
        return (f"{said} by its two allocator modes, each side held in each (its pairs at large, "
                f"{r.median:.2f}, put each side in the mode its processes fell into)"
                + (f": {'; '.join(why)}" if why else ""))
    if said == WITHIN:
        # within the target; pairs left out are still said
        return f"within {TARGET:.0%}: {'; '.join(why)}" if len(cal.compared) < len(cal.pairs) else None
    if said == NOT_DECIDED:
        head = "not decided: " + (
            f"{len(cal.compared)} pairs' CI covers the median {r.ci_confidence:.0%} of the time, under "
            f"{DECIDE_CONFIDENCE:.0%}" if r.ci_confidence < DECIDE_CONFIDENCE
            else f"its CI {r.ci_low:.2f}–{r.ci_high:.2f} straddles a bound of {1 - TARGET:.2f}–{1 + TARGET:.2f}")
    else:
        head = f"lab {abs(r.median - 1):.0%} {'slower' if r.median > 1 else 'faster'}"
    return head + (f": {'; '.join(why)}" if why else "")


def modes_line(cal: Calibration) -> str | None:
    """A large answer's allocator modes, both sides held in each: each side's rate in each, with
    how many of its own (unheld) trials or rounds fell into it, and lab ÷ plain with its verdict
    per mode; None where the cell had no trials in a mode."""
    if not any(cal.mode_pairs.values()):
        return None
    own, processes = cal.fresh_pages(), cal.lab_processes()
    sides = []
    for name, index in (("lab", 0), (cal.reference, 1)):
        rates = []
        for mode, pairs in cal.mode_pairs.items():
            per = median([p.lab_s if index == 0 else p.bare.per_request_s for p in pairs])
            count = ""
            if index == 0 and processes is not None and processes.told:
                # a mode is a process's: the lab's trials counted by the process that ran them
                k = processes.fresh if mode == FRESH_MODE else processes.heap
                count = f" ({k} of {processes.told} process{'' if processes.told == 1 else 'es'})"
            elif own is not None and own[index][1]:
                # the loop's rounds are fresh processes each; the lab's trials, where they did not say
                # which process ran them, are counted as trials
                fresh, read = own[index]
                what = "trials" if index == 0 else "processes"
                count = f" ({fresh if mode == FRESH_MODE else read - fresh} of {read} {what})"
            rates.append(f"{1 / per:,.0f} {mode}{count}")
        changed = f", {processes.changed} changed mode mid-life" if index == 0 and processes and processes.changed else ""
        sides.append(f"{name} {' / '.join(rates)}{changed}")
    verdicts = []
    for mode, pairs in cal.mode_pairs.items():
        r = summarize([p.ratio for p in pairs])
        verdicts.append(f"{mode} {r.median:.2f} ({r.ci_low:.2f}–{r.ci_high:.2f}, {len(pairs)} held pairs) "
                        f"{cal.mode_decision(mode)}")
    return f"allocator modes, req/s: {'; '.join(sides)}; lab ÷ {cal.reference}: {', '.join(verdicts)}"


def calibration_table(cells: list[Calibration], title: str) -> tuple[Table, list[str]]:
    """The table, a section per scenario, the ratio green within the target and red past it; and
    a note per cell that missed it, has no ratio, or had pairs left out (kept out of the table:
    it stays narrow)."""
    reference = cells[0].reference if cells else "bare"
    table = Table(title=title, caption=CAPTIONS[reference])
    table.add_column("driver", no_wrap=True)
    for column in ("lab req/s", f"{reference} req/s", f"lab ÷ {reference}", "CPU µs", "pairs"):
        table.add_column(column, justify="right")
    notes = []
    for i, c in enumerate(cells):
        if i == 0 or c.scenario != cells[i - 1].scenario:
            if i:
                table.add_section()
            table.add_row(f"[bold]{escape(c.scenario)}[/]")  # get-small[timeout_s=5.0] is not markup
        said = c.verdict if c.pairs else None
        style = {WITHIN: "green", OFF: "bold red", NOT_DECIDED: "yellow"}.get(said or "", "")
        shown = ratio(c.ratio_summary)
        decided = f"{len(c.pairs)} {said}" if c.pairs else "—"
        table.add_row(c.driver, rate(c.lab_summary), rate(c.bare_summary),
                      f"[{style}]{shown}[/]" if style else shown, cpu(c), decided)
        # the manifest's known cause stands beside the figure; the ratio and its verdict stay
        cause = f"known cause: {escape(c.note)}" if c.note and said != WITHIN else None
        why = "; ".join(w for w in (verdict(c), cause, modes_line(c), c.rounds_note()) if w)
        if why:
            notes.append(f"{c.driver} × {escape(c.scenario)}: {why}")
    return table, notes


def verdicts_line(cells: list[Calibration]) -> str:
    """The check's answer in one line, from the cells' verdicts (Calibration.verdict, the same
    that colour the table and set the exit code): how many are within, and which are off or not
    decided."""
    said = Verdicts.of(cells)
    reference = cells[0].reference if cells else "bare"
    named = lambda group: ", ".join(f"{c.driver} × {c.scenario}" for c in group)
    if reference != "plain":
        return (f"{len(said.within)} of {said.judged} cells within {TARGET:.0%} of the driver's plain loop"
                + (f"; not: {named(said.off)}" if said.off else ""))
    return (f"{len(said.within)} of {said.judged} cells within {TARGET:.0%} of the library's plain loop (lab ÷ plain's "
            f"CI, at {DECIDE_CONFIDENCE:.0%} coverage or more, inside {1 - TARGET:.2f}–{1 + TARGET:.2f}); "
            f"{len(said.off)} off (wholly outside)" + (f": {named(said.off)}" if said.off else "")
            + f"; {len(said.not_decided)} not decided (a CI that straddles a bound or covers too little, or no ratio)"
            + (f": {', '.join(_undecided_name(c) for c in said.not_decided)}" if said.not_decided else ""))


def _undecided_name(cal: Calibration) -> str:
    """'d × s (7 pairs)', '… (1 pair, the time budget spent)' or '… (no ratio: its problem)': a cell
    not decided, with what it had to decide on."""
    figures = cal.lab.figures if cal.lab is not None else None
    budget = ", the time budget spent" if figures is not None and figures.budget_stopped else ""
    n = len(cal.compared) if cal.pairs else 0
    had = f"{n} pair{'' if n == 1 else 's'}" if cal.ratio_summary is not None else \
        f"no ratio: {cal.problem or 'no pair'}"
    return f"{cal.driver} × {cal.scenario} ({had}{budget})"
