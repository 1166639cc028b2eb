"""The behaviour matrix as text (drivers down, cases across, a compact code a cell, within 80
columns), the evidence of every cell that is not "ok", the legend and the versions; and as JSON.
It prints only what behave.run_matrix recorded: no computing here but the overshoot's
subtraction of the case's timeout from the lab's clock."""

from __future__ import annotations

import dataclasses
import re
import textwrap
from typing import Any

from clientlab.behaviour import cases as behaviour
from clientlab.behaviour.behave import BehaveCell
from clientlab.behaviour.cases import CREDENTIALS, BehaviourCase
from clientlab.record import Cell

WIDTH = 80
COLUMN = 10

CORRECT = {"deadline": "an error within the timeout + 10 %", "truncation": "an error, not a short 200",
           "credentials": "no credentials header at the other origin",
           "retry": "GET: retried once on a new connection, then answered; POST: an error, sent once",
           "see-other": "a GET without the body at the 303's target",
           "bomb": "an error (a limit kept), the peak memory well below the decoded size",
           "headers": "an error, not a hang or a crash",
           "certificate": "refused: an error, and no request at the server after the handshake",
           "streams": "every request answered: an unprocessed stream sent again",
           "pool": "every fast request answered, arriving before any slow answer",
           "next-address": "the first address given up (or raced), the 200 from the second within 2 s"}

LEGEND = (
    ("ok+N", "an error N ms after the timeout, within its 10 %: a deadline kept"),
    ("LATE+N", "an error more than 10 % after the timeout (the earliest of 3 tries)"),
    ("NODEAD", "no error within the lab's limit (killed), or the request completed"),
    ("ok", "truncation reported as an error; no credentials at the other origin"),
    ("SHORT", "a truncated body reported as a complete response"),
    ("LEAK:x", "at the other origin: A Authorization, C Cookie, P Proxy-Authorization"),
    ("NOFOLLOW", "the redirect was not followed"),
    ("ok:retry", "a dropped GET retried once on a new connection, then answered"),
    ("ok:err", "a dropped POST reported as an error, never sent again"),
    ("NORETRY", "a dropped GET reported as an error, not retried (RFC 9110 §9.2.2)"),
    ("DUP", "a dropped POST sent again: the server got it twice"),
    ("RETRY>1", "a dropped GET sent more than twice"),
    ("RETRYFAIL", "a dropped GET retried, yet reported as an error"),
    ("NOREUSE", "the second request did not reuse the kept connection: no race"),
    ("PHANTOM", "an answer reported for a request the server never answered"),
    ("POST/BODY", "after a 303: the POST repeated / a GET with the body"),
    ("ok:NM", "a bomb or an oversized head refused with an error, at a peak of N MiB"),
    ("HELDALL", "ended by the memory cap, or out of memory: it held what it decoded"),
    ("TIMEOUT", "a bomb's decoding ended by the job's time limit: no limit on its size"),
    ("TOOK:NM", "an oversized head taken whole, at a peak of N MiB"),
    ("raw:NM", "a bomb handed over still encoded (not inflated), at a peak of N MiB"),
    ("LOST:k", "k unprocessed streams reported as errors, not sent again"),
    ("NOMUX", "one request a connection: no stream in flight beside another"),
    ("STARVED", "a fast request arrived after a slow answer: held behind it"),
    ("FASTERR", "a fast request reported as an error beside the slow ones"),
    ("ACCEPTED", "a certificate to refuse taken: a request reached the server after it"),
    ("EXCEEDED", "streams opened past a lowered stream limit (refused, then sent again)"),
    ("NOTASKED", "the request did not ask for br: no brotli bomb was sent"),
    ("ok:Nms", "a name's first address dark: the second one answered, N ms after go"),
    ("SLOW:Ns", "the second address answered only N s after go (past RFC 8305's 2 s)"),
    ("NONEXT", "the dark first address only: an error, or nothing (killed)"),
    ("NODARK", "the dark address never tried: the second one came first"),
    ("nons", "the lab cannot make the network namespace the case needs (not root)"),
    ("HUNG", "no answer after the server closed (killed)"),
    ("unsup", "the driver cannot do the job (the reason below)"),
    ("FAIL", "the driver broke (the reason below)"),
    ("n/i", "the driver is not installed"),
    ("=", "recommended: the defaults' job (how the driver sets the timeout)"),
    ("—", "recommended: the library's docs recommend no setting"),
)


PEAK_CODES = {"ok": "ok", "accepted": "TOOK", "undecoded": "raw"}  # outcomes shown with the driver's peak memory

# what a cell's outcome says of the client: kept its promise, or the cell shows nothing (every
# other outcome is a finding)
KEPT = {"ok", "undecoded"}
SHOWS_NOTHING = {"unsupported", "not-installed", "not-sent", "not-reused", "no-cap", "not-followed", "not-multiplexed",
                 "not-asked", "no-recommendation", "dark-untried", "no-namespace"}


def wrapped(text: str, indent: str) -> list[str]:
    """`text` wrapped at the matrix's 80 columns, its later lines indented by `indent`."""
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [""]



def overshoot_ms(cell: BehaveCell, bc: BehaviourCase) -> int | None:
    if cell.elapsed_s is None or bc.case.check != "deadline":
        return None
    return round((cell.elapsed_s - bc.case.timeout_s) * 1000)


def code(cell: BehaveCell, bc: BehaviourCase) -> str:
    if cell.same_as_defaults:
        return "="
    o = cell.outcome.outcome
    over = overshoot_ms(cell, bc)
    if o == "ok" and over is not None:
        return f"ok{over:+d}"
    peak = cell.outcome.peak_bytes
    if o in PEAK_CODES and peak is not None:
        return f"{PEAK_CODES[o]}:{peak >> 20}M"
    if o in ("ok", "slow-fallback") and bc.case.check == "next-address" and cell.elapsed_s is not None:
        return f"ok:{round(cell.elapsed_s * 1000)}ms" if o == "ok" else f"SLOW:{cell.elapsed_s:.{0 if cell.elapsed_s >= 10 else 1}f}s"
    if o == "ok" and bc.case.check == "retry":
        return "ok:retry" if bc.case.method == "GET" else "ok:err"
    if o == "late":
        return "LATE" if over is None else f"LATE{over:+d}"
    if o == "lost":
        return "LOST:" + (cell.outcome.detail or "?").split(" of ")[0]
    if o == "leaked":
        detail = cell.outcome.detail or ""
        return "LEAK:" + "".join(h[0] for h in CREDENTIALS if h in detail.split(" reached")[0].split(", "))
    return {"ok": "ok", "no-deadline": "NODEAD", "accepted-short": "SHORT", "not-followed": "NOFOLLOW",
            "hung": "HUNG", "not-sent": "NOTSENT", "unsupported": "unsup", "failed": "FAIL",
            "no-retry": "NORETRY", "duplicated": "DUP", "retried-more": "RETRY>1", "retry-failed": "RETRYFAIL",
            "not-reused": "NOREUSE", "phantom": "PHANTOM", "first-failed": "FIRSTERR", "kept-post": "POST",
            "kept-body": "BODY", "held-all": "HELDALL", "inflated": "INFLATED", "accepted": "TOOK",
            "no-cap": "nocap", "not-multiplexed": "NOMUX", "starved": "STARVED", "fast-failed": "FASTERR",
            "no-recommendation": "—", "no-fallback": "NONEXT", "dark-untried": "NODARK", "no-namespace": "nons",
            "cert-accepted": "ACCEPTED", "timed-out": "TIMEOUT", "exceeded": "EXCEEDED", "not-asked": "NOTASKED",
            "not-installed": "n/i"}.get(o, o[:COLUMN - 1])


def rows(cells: list[BehaveCell]) -> list[tuple[str, str, str]]:
    """The matrix's rows, in the order the cells came: (driver, setting, row label); a driver's
    recommended row under its defaults row, labelled as such when the cells hold both settings."""
    settings = list(dict.fromkeys(c.setting for c in cells))
    both = len(settings) > 1
    return [(d, s, d if s == "defaults" or not both else "  recommended")
            for d in dict.fromkeys(c.driver for c in cells) for s in settings]


def recommendations(cells: list[BehaveCell]) -> dict[str, dict | None]:
    """Each driver's recommendation that its recommended cells ran with (None: it has none)."""
    out: dict[str, dict | None] = {}
    for c in cells:
        if c.setting == "recommended":
            out[c.driver] = out.get(c.driver) or c.recommended
    return out


def matrix_lines(cells: list[BehaveCell], cases: list[BehaviourCase], run_id: int | None,
                 sections: list[str] | None = None) -> list[str]:
    """The matrix, its cases, legend, recommendations and evidence, then `sections` (lines the
    caller adds: output/behavefindings.py's views), the versions and the run's id."""
    by = {(c.driver, c.case, c.setting): c for c in cells}
    table = rows(cells)
    name_w = max([len(label) for _, _, label in table] + [6]) + 1
    per_row = max(1, (WIDTH - name_w) // COLUMN)
    lines: list[str] = []
    for start in range(0, len(cases), per_row):
        group = cases[start:start + per_row]
        lines.append("driver".ljust(name_w) + "".join(bc.label.ljust(COLUMN) for bc in group).rstrip())
        for d, setting, label in table:
            row = "".join((code(by[(d, bc.name, setting)], bc) if (d, bc.name, setting) in by else "").ljust(COLUMN)
                          for bc in group)
            lines.append(label.ljust(name_w) + row.rstrip())
        lines.append("")
    lines.append("cases:")
    for bc in cases:
        lines += wrapped(f"  {bc.label:<9} {bc.name}: {CORRECT[bc.case.check]} (timeout {bc.case.timeout_s:g} s)", " " * 12)
    lines.append("")
    lines += [f"{mark:<9}{meaning}" for mark, meaning in LEGEND]
    lines.append("")
    recommended = recommendations(cells)
    if recommended:
        lines.append("recommended settings (the library's own docs, for production use):")
        for d, rec in recommended.items():
            if rec is None:
                lines += wrapped(f"  {d}: — no documented recommendation", " " * 6)
            else:
                lines += wrapped(f"  {d}: {rec['setting']}. {rec['why']} ({rec['source']})", " " * 6)
        lines.append("")
    evidence = [c for c in cells if c.outcome.outcome not in ("ok", "no-recommendation") and not c.same_as_defaults]
    if evidence:
        lines.append("evidence:")
        for c in evidence:
            detail = (c.outcome.detail or "").splitlines()
            which = " (recommended)" if c.setting == "recommended" else ""
            lines += wrapped(f"  {c.driver} {c.case}{which}: {detail[0] if detail else ''}", " " * 6)
            for extra in detail[1:]:
                lines += wrapped(f"      {extra}", " " * 6)
        lines.append("")
    lines += sections or []
    lines.append("versions:")
    for d in dict.fromkeys(c.driver for c in cells):
        versions = next((c.versions for c in cells if c.driver == d and c.versions), {})
        lines += wrapped(f"  {d}: " + (", ".join(f"{k} {v}" for k, v in versions.items()) or "-"), " " * 6)
    if run_id is not None:
        lines.append(f"stored as run {run_id}")
    return lines


def matrix_json(cells: list[BehaveCell], cases: list[BehaviourCase], run_id: int | None) -> dict[str, Any]:
    by_name = {bc.name: bc for bc in cases}
    return {
        "run": run_id,
        "cases": [{"name": bc.name, "label": bc.label, "description": bc.case.description, "check": bc.case.check,
                   "timeout_s": bc.case.timeout_s, "references": bc.case.references} for bc in cases],
        "recommended": recommendations(cells),
        "cells": [{"driver": c.driver, "case": c.case, "setting": c.setting, "same_as_defaults": c.same_as_defaults,
                   "status": c.status, "outcome": c.outcome.outcome,
                   "code": code(c, by_name[c.case]), "detail": c.outcome.detail, "elapsed_s": c.elapsed_s,
                   "overshoot_ms": overshoot_ms(c, by_name[c.case]), "peak_bytes": c.outcome.peak_bytes,
                   "versions": c.versions} for c in cells],
    }


def stored_matrix(stored: list[Cell]) -> tuple[list[BehaveCell], list[BehaviourCase]]:
    """The cells and cases of a stored run of kind behave: its cases as behaviours/ describes
    them, with the timeout each cell ran with (its params); cells of a case no longer there are
    left out."""
    known = {bc.name: bc for bc in behaviour.discover().found}
    cells, cases = [], {}
    for c in stored:
        if c.figures is None or not c.figures.behaviours or c.scenario not in known:
            continue
        bc = known[c.scenario]
        if isinstance((c.params or {}).get("timeout_s"), (int, float)):
            bc = dataclasses.replace(bc, case=bc.case.model_copy(update={"timeout_s": c.params["timeout_s"]}))
        cases.setdefault(c.scenario, bc)
        params = c.params or {}
        cells.append(BehaveCell(c.driver, c.scenario, c.status, c.figures.behaviours[0], dict(c.versions or {}),
                                str(params.get("setting") or "defaults"), params.get("recommended"),
                                bool(params.get("same_as_defaults"))))
    return cells, list(cases.values())


def stored_matrix_lines(stored: list[Cell], run_id: int, sections: list[str] | None = None) -> list[str]:
    """The matrix of a stored run of kind behave, as `clientlab show` prints it."""
    cells, cases = stored_matrix(stored)
    return matrix_lines(cells, cases, run_id, sections)


def changes(a: list[Cell], b: list[Cell]) -> list[dict[str, Any]]:
    """The cells of two behave runs whose code changed (a driver on a case in both runs), each
    with both codes, both details and the versions that differ."""
    cells_a, cases_a = stored_matrix(a)
    cells_b, cases_b = stored_matrix(b)
    cases = {bc.name: bc for bc in [*cases_a, *cases_b]}
    by_b = {(c.driver, c.case, c.setting): c for c in cells_b}
    out = []
    for ca in cells_a:
        cb = by_b.get((ca.driver, ca.case, ca.setting))
        if cb is None:
            continue
        bc = cases[ca.case]
        # a recommended cell shown as "=" is compared by what the client did
        code_a, code_b = (code(dataclasses.replace(c, same_as_defaults=False), bc) for c in (ca, cb))
        if (ca.outcome.outcome, _unmeasured(code_a)) == (cb.outcome.outcome, _unmeasured(code_b)):
            # the same verdict: a time or a peak that moved is a detail (the host's noise), not a change
            # of behaviour; where the verdict turns on a figure (a deadline's time past its bound: ok
            # to late) the outcome changed, and both codes show the figures
            continue
        versions = {k: (ca.versions.get(k), cb.versions.get(k)) for k in {*ca.versions, *cb.versions}
                    if ca.versions.get(k) != cb.versions.get(k)}
        out.append({"driver": ca.driver, "case": ca.case, "setting": ca.setting, "a": code_a, "b": code_b,
                    "outcome_a": ca.outcome.outcome, "outcome_b": cb.outcome.outcome, "detail_a": ca.outcome.detail,
                    "detail_b": cb.outcome.detail,
                    "versions": versions})
    return out


def _unmeasured(cell_code: str) -> str:
    """A code without its figures (ok+12, LATE+500, ok:41M, ok:203ms, SLOW:2.5s): what the client
    did, not how long or how much; what is not a figure stays (LEAK:AC, ok:retry)."""
    return re.sub(r"[+-]?\d+(?:\.\d+)?(?:ms|s|M)?(?![A-Za-z])", "", cell_code)


def change_lines(run_a: int, run_b: int, changed: list[dict[str, Any]], common: int) -> list[str]:
    """`clientlab compare` of two behave runs: which cells changed, from what to what."""
    if not changed:
        return [f"behave runs {run_a} and {run_b}: the same outcome in all {common} cell(s) they share"]
    lines = [f"behave runs {run_a} → {run_b}: {len(changed)} of {common} shared cell(s) changed"]
    for ch in changed:
        which = " (recommended)" if ch["setting"] == "recommended" else ""
        lines.append(f"  {ch['driver']} {ch['case']}{which}: {ch['a']} → {ch['b']}")
        for side in ("a", "b"):
            lines += wrapped(f"      {side.upper()}: {ch['detail_' + side] or '-'}", " " * 9)
        if ch["versions"]:
            lines += wrapped("      versions: " + ", ".join(f"{k} {va or '-'} → {vb or '-'}"
                                                          for k, (va, vb) in sorted(ch["versions"].items())), " " * 9)
    return lines
