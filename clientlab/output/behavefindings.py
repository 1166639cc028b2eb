"""Two views of a behaviour matrix that the issue's figures ask for, read from its cells as
stored: the cases where clients of one language disagree, and the failures in a published CVE's
class with the versions the drivers ran. Both read the defaults column (the library as it ships)
and the codes of `clientlab show` without their figures (what the client did, not how long or
how much); a cell that shows nothing (unsupported, not installed, the fault never reached) or
whose driver broke is left out. Pure: the text and the report's HTML both draw these."""

from __future__ import annotations

import re
from dataclasses import dataclass

from clientlab.behaviour.behave import BehaveCell
from clientlab.behaviour.cases import BehaviourCase
from clientlab.output.behave import KEPT, SHOWS_NOTHING, code, wrapped

CVE = re.compile(r"\bCVE-\d{4}-\d{4,}\b")
# hello's versions that name the runtime, the compiler or the TLS and compression libraries under
# a client, not the client: left out where a failure names the library's version
PLATFORM = frozenset({"python", "node", "bun", "deno", "go", "java", "jvm", "tls", "openssl", "ssl", "zlib",
                      "compiler", "rustc", "perl", "php", "ruby", "ruby-openssl", "crypto/tls", "io-socket-ssl",
                      "net-ssleay", "ring", "rustls", "nghttp2", "boost"})


@dataclass(frozen=True)
class Split:
    """One language on one case: each behaviour (a code without its figure) with its drivers."""

    language: str
    case: str
    behaviours: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class CveFailure:
    """A case whose references name CVEs, and each failing behaviour with the drivers that showed
    it and the versions each ran (driver, its library versions)."""

    case: str
    cves: tuple[str, ...]
    failures: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]


def language(driver: str) -> str:
    """A driver's language: its id's first word (a manifest's id starts with its language)."""
    return driver.split("-", 1)[0]


def behaviour_code(cell: BehaveCell, bc: BehaviourCase) -> str:
    """The cell's code without its figure: ok+32 → ok, ok:41M → ok, SLOW:5.0s → SLOW,
    ok:263ms → ok; LOST:2 and LEAK:AP keep theirs (what was lost or leaked is the behaviour)."""
    shown = code(cell, bc)
    return re.sub(r"(?:[+-]\d+|:\d+M|:\d+ms|:[\d.]+s)$", "", shown)


def judged(cell: BehaveCell) -> bool:
    """A cell whose outcome says what the client did: not one that shows nothing, nor one whose
    driver broke."""
    return cell.status == "ok" and cell.outcome.outcome not in SHOWS_NOTHING and not cell.same_as_defaults


def disagreements(cells: list[BehaveCell], cases: list[BehaviourCase]) -> list[Split]:
    """Each language and case (the defaults column) where its judged drivers did different
    things, languages and cases in the matrix's order, behaviours in the order first seen."""
    by_case = {bc.name: bc for bc in cases}
    groups: dict[tuple[str, str], dict[str, list[str]]] = {}
    languages = list(dict.fromkeys(language(c.driver) for c in cells))
    for c in cells:
        if c.setting != "defaults" or c.case not in by_case or not judged(c):
            continue
        groups.setdefault((language(c.driver), c.case), {}).setdefault(behaviour_code(c, by_case[c.case]), []) \
            .append(c.driver)
    out = []
    for lang in languages:
        for bc in cases:
            seen = groups.get((lang, bc.name), {})
            if len(seen) > 1:
                out.append(Split(lang, bc.name, tuple((b, tuple(ds)) for b, ds in seen.items())))
    return out


def library_versions(versions: dict) -> str:
    """The versions a driver's hello named, the runtime and TLS libraries left out (all of them
    where nothing else is left); '-' where it named none."""
    own = {k: v for k, v in versions.items() if k.lower() not in PLATFORM} or versions
    return ", ".join(f"{k} {v}" for k, v in own.items()) or "-"


def cve_failures(cells: list[BehaveCell], cases: list[BehaviourCase]) -> list[CveFailure]:
    """Each case whose references name a CVE, with its failing cells in the defaults column: a
    judged outcome other than the kept ones, by behaviour, each driver with its versions."""
    out = []
    for bc in cases:
        cves = tuple(dict.fromkeys(m for ref in bc.case.references for m in CVE.findall(ref)))
        if not cves:
            continue
        failing: dict[str, list[tuple[str, str]]] = {}
        for c in cells:
            if c.case == bc.name and c.setting == "defaults" and judged(c) and c.outcome.outcome not in KEPT:
                failing.setdefault(behaviour_code(c, bc), []).append((c.driver, library_versions(c.versions)))
        if failing:
            out.append(CveFailure(bc.name, cves, tuple((b, tuple(ds)) for b, ds in failing.items())))
    return out


def disagreement_lines(splits: list[Split]) -> list[str]:
    """The text section (a line a language and case, wrapped at 80 columns)."""
    if not splits:
        return []
    lines = ["clients of one language that disagree (defaults; codes without figures):"]
    for s in splits:
        said = "; ".join(f"{b}: {', '.join(ds)}" for b, ds in s.behaviours)
        lines += wrapped(f"  {s.language} {s.case}: {said}", " " * 6)
    return lines + [""]


def cve_lines(found: list[CveFailure]) -> list[str]:
    """The text section: each case with its CVEs, each failing behaviour with its drivers."""
    if not found:
        return []
    lines = ["failures in a published CVE's class (defaults), with the library's versions:"]
    for f in found:
        lines += wrapped(f"  {f.case} ({', '.join(f.cves)}):", " " * 6)
        for b, drivers in f.failures:
            lines += wrapped(f"    {b}: " + "; ".join(f"{d} ({v})" for d, v in drivers), " " * 8)
    return lines + [""]


def findings_lines(cells: list[BehaveCell], cases: list[BehaviourCase]) -> list[str]:
    """Both sections, as `behave` and `show` print them after the matrix's evidence."""
    return disagreement_lines(disagreements(cells, cases)) + cve_lines(cve_failures(cells, cases))
