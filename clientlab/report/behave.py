"""`clientlab report` of a behave run: the behaviour matrix as one self-contained page, with
nothing to fetch: clients down, cases across, a code a cell (the codes of `clientlab show`, with
their legend); each cell's evidence on hover (its title) and one click away (a details element);
the cases with what correct means and their references, and the versions that ran."""

from __future__ import annotations

from html import escape

from clientlab.behaviour.behave import BehaveCell
from clientlab.behaviour.cases import BehaviourCase
from clientlab.output.behave import CORRECT, KEPT, LEGEND, SHOWS_NOTHING, code, recommendations, rows
from clientlab.output.behavefindings import cve_failures, disagreements


def e(value: object) -> str:
    return escape(str(value), quote=True)


def _class(cell: BehaveCell) -> str:
    o = cell.outcome.outcome
    if cell.same_as_defaults:
        return "same " + ("kept" if o in KEPT else "none" if o in SHOWS_NOTHING else "finding")
    if o in KEPT:
        return "kept"
    if cell.status == "failed":
        return "broke"
    return "none" if o in SHOWS_NOTHING else "finding"


def _cell(cell: BehaveCell | None, bc: BehaviourCase) -> str:
    if cell is None:
        return "<td></td>"
    detail = cell.outcome.detail or ""
    return (f'<td class="{_class(cell)}" title="{e(detail)}"><details><summary>{e(code(cell, bc))}</summary>'
            f'<div class="evidence">{e(detail) or "—"}</div></details></td>')


def _section(title: str, caption: str, heads: tuple[str, str, str],
             rows_: list[tuple[str, str, list[tuple[str, str]]]]) -> str:
    """A findings section: a row a (first, second) pair, its behaviours each a code and who showed
    it; nothing where there are no rows."""
    if not rows_:
        return ""
    body = "".join(f"<tr><th>{e(a)}</th><td>{e(b)}</td><td>"
                   + "<br>".join(f"<code>{e(code_)}</code>: {e(who)}" for code_, who in said) + "</td></tr>"
                   for a, b, said in rows_)
    return (f'<h2>{e(title)}</h2><p class="caption">{e(caption)}</p><table><tr>'
            + "".join(f"<th>{e(h)}</th>" for h in heads) + f"</tr>{body}</table>")


def page(run_id: int, title: str, cells: list[BehaveCell], cases: list[BehaviourCase]) -> str:
    drivers = list(dict.fromkeys(c.driver for c in cells))
    by = {(c.driver, c.case, c.setting): c for c in cells}
    head = "".join(f'<th title="{e(bc.case.description)}">{e(bc.label)}</th>' for bc in cases)
    body = "".join(("<tr><th class=\"rec\">" if s == "recommended" else "<tr><th>") + f"{e(label)}</th>"
                   + "".join(_cell(by.get((d, bc.name, s)), bc) for bc in cases) + "</tr>"
                   for d, s, label in rows(cells))
    recommended = "".join(
        f"<tr><th>{e(d)}</th>" + (f"<td>{e(rec['setting'])}</td><td>{e(rec['why'])}</td><td>{e(rec['source'])}</td>"
                                 if rec else '<td colspan="3">— no documented recommendation</td>') + "</tr>"
        for d, rec in recommendations(cells).items())
    recommended_part = ("<h2>Recommended settings</h2><p class=\"caption\">Each library's own documented "
                        "recommendation for production use, which the recommended rows ran with.</p><table><tr>"
                        "<th>driver</th><th>setting</th><th>why</th><th>source</th></tr>" + recommended + "</table>"
                        ) if recommended else ""
    legend = "".join(f"<tr><td><code>{e(mark)}</code></td><td>{e(meaning)}</td></tr>" for mark, meaning in LEGEND)
    described = "".join(
        f"<tr><td><code>{e(bc.label)}</code></td><td>{e(bc.name)}</td><td>{e(bc.case.description)}</td>"
        f"<td>{e(CORRECT[bc.case.check])}</td><td>{e(', '.join(bc.case.references))}</td></tr>" for bc in cases)
    splits_part = _section(
        "Clients of one language that disagree", "The defaults column: each language and case whose clients did "
        "different things (codes without their figures; cells that show nothing or broke left out).",
        ("language", "case", "what each did"),
        [(sp.language, sp.case, [(b, ", ".join(ds)) for b, ds in sp.behaviours]) for sp in disagreements(cells, cases)])
    cves_part = _section(
        "Failures in a published CVE's class", "The defaults column: each case whose references name a CVE, its "
        "failing cells by what the client did, each driver with the versions its hello named (runtimes and TLS "
        "libraries left out).", ("case", "CVEs", "failures"),
        [(f.case, ", ".join(f.cves), [(b, "; ".join(f"{d} ({v})" for d, v in ds)) for b, ds in f.failures])
         for f in cve_failures(cells, cases)])
    versions = "".join(
        f"<tr><th>{e(d)}</th><td>{e(', '.join(f'{k} {v}' for k, v in next((c.versions for c in cells if c.driver == d and c.versions), {}).items()) or '—')}</td></tr>"
        for d in drivers)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>clientlab: behaviour matrix, run {e(run_id)}</title>
<style>
body {{ font-family: "DejaVu Sans", "Liberation Sans", sans-serif; margin: 1.5em auto; max-width: 1300px;
       padding: 0 1em; color: #222; }}
table {{ border-collapse: collapse; max-width: 100%; margin-bottom: 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.5em; text-align: left; vertical-align: top; overflow-wrap: anywhere; }}
th {{ background: #f4f4f4; font-weight: normal; }}
.matrix td, .matrix th {{ white-space: nowrap; overflow-wrap: normal; padding: 0.2em 0.35em; font-size: 0.9em; }}
.matrix td {{ font-family: "DejaVu Sans Mono", monospace; }}
.wide {{ overflow-x: auto; }}
.matrix details[open] {{ white-space: normal; max-width: 24em; }}
.evidence {{ font-family: "DejaVu Sans", sans-serif; font-size: 0.85em; color: #333; margin-top: 0.3em; }}
summary {{ cursor: pointer; }}
.kept {{ background: #e6f4ea; }} .finding {{ background: #fbe3e3; }} .broke {{ background: #f8d7a8; }}
.none {{ background: #eee; color: #666; }} .caption {{ color: #555; font-size: 0.9em; }}
.same {{ opacity: 0.6; }} th.rec {{ padding-left: 1.2em; color: #555; }}
</style></head>
<body>
<h1>Behaviour matrix: run {e(run_id)}</h1>
<p class="caption">{e(title)}</p>
<p class="caption">Clients down, cases across. Green: the client did what the case calls correct; red: it did
not (a finding); orange: the driver broke; grey: the cell shows nothing (unsupported, not installed, or the
client never reached the fault). Under each driver, its library's documented recommended setting
(recommended; "=" where that is the job of the row above, faded). Hover over a cell for its evidence, or click it.</p>
<div class="wide"><table class="matrix"><tr><th>driver</th>{head}</tr>{body}</table></div>
{splits_part}
{cves_part}
<h2>Codes</h2><table>{legend}</table>
{recommended_part}
<h2>Cases</h2><table><tr><th>column</th><th>case</th><th>the server</th><th>correct</th><th>references</th></tr>{described}</table>
<h2>Versions</h2><table>{versions}</table>
</body></html>
"""
