"""The diagnosis's answer for CPU: a cell that costs ≥ 2× the CPU a request of the fastest client
of its language on the same scenario in the same run gets a finding that names the code paths
accounting for the difference (differential.py), in µs a request, and the known cause where a
path is one (rules/causes.toml). A cell with no profile still gets the finding, with the
command that profiles it."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clientlab.profile import folded as fold
from clientlab.profile.differential import Path as CodePath
from clientlab.profile.differential import Weighted, combined, paths, weighted
from clientlab.profile.layers import HARNESS_SHOWN, own_covers, perf_side
from clientlab.profile.rules import Rules

if TYPE_CHECKING:
    from clientlab.store import Store

GAP = 2.0   # a cell this many times the CPU a request of its language's fastest gets a finding
CAUSES = Path(__file__).parent / "rules" / "causes.toml"


@dataclass(frozen=True)
class Cause:
    id: str
    what: str
    fix: str
    frames: re.Pattern[str] | None = None
    layer: str | None = None
    min_share: float = 0.0
    callers: re.Pattern[str] | None = None   # the path must also pass through a frame like this


@lru_cache(maxsize=1)
def causes() -> tuple[Cause, ...]:
    with open(CAUSES, "rb") as f:
        raw = tomllib.load(f).get("cause", [])
    return tuple(Cause(c["id"], c["what"], c["fix"], re.compile(c["frames"]) if c.get("frames") else None,
                       c.get("layer"), float(c.get("min_share", 0.0)),
                       re.compile(c["callers"]) if c.get("callers") else None) for c in raw)


def cause_of(path: CodePath) -> Cause | None:
    """The known cause a path is, if any (the causes that hold of a whole profile left out)."""
    for c in causes():
        if c.frames is not None and not c.min_share and any(c.frames.search(f) for f in path.frames) and (
                c.callers is None or any(c.callers.search(f) for f in path.frames[:-1])):
            return c
    return None


def profile_causes(w: Weighted) -> list[Cause]:
    """The causes that hold of the whole profile: their frames under at least `min_share` of it."""
    found = []
    whole = fold.total(w.folded)
    for c in causes():
        if c.frames is None or not c.min_share or not whole:
            continue
        under = sum(n for stack, n in w.folded.items() if any(c.frames.search(f) for f in fold.frames_of(stack)))
        if under / whole >= c.min_share:
            found.append(c)
    return found


def language_of(driver: str) -> str:
    """A driver id is `<language>-<library>[-variant]` (docs/driver-protocol.md §1)."""
    return driver.split("-", 1)[0]


def cpu_us(cell: dict) -> float | None:
    f = cell.get("figures") or {}
    requests = f.get("requests")
    if not requests or f.get("cpu_user_s") is None:
        return None
    return ((f.get("cpu_user_s") or 0.0) + (f.get("cpu_sys_s") or 0.0)) / requests * 1e6


def profile_of(store: Store, cell: dict, rules: Rules,
               with_perf: bool = False) -> tuple[Weighted | None, dict[str, fold.Folded]]:
    """The cell's primary profile weighted to µs a request, and every profiler's stacks. With
    `with_perf`, a language profiler's stacks come with perf's of what it does not stand for
    (differential.combined): the differential's view, the whole CPU."""
    from clientlab.store.profiles import cell_profiles

    rows = cell_profiles(store, cell["id"])
    if not rows:
        return None, {}
    profiles = {r["profiler"]: fold.from_text(r["folded"]) for r in rows}
    meta = rows[0].get("meta") or {}
    layers = (cell.get("figures") or {}).get("layers") or {}
    if not meta.get("requests"):
        return None, profiles
    per_request = meta["cpu_s"] / meta["requests"] * 1e6
    kernel = sum(s["share"] for s in layers.get("shares", []) if s["layer"] == "kernel")
    if "perf" in profiles and len(profiles) > 1:
        # what perf's samples stand for alone (the kernel side, and for a profiler of the
        # language's frames alone the native layers): the language profiler has none of it
        own = next(name for name in profiles if name != "perf")
        kernel = 1 - own_covers(own, profiles, rules)
        perf = profiles["perf"]
        w = weighted(profiles, per_request, kernel, rules)
        # (a language profile that had nothing to give is perf's alone already)
        if with_perf and w is not None and w.folded is not perf and fold.total(perf):
            return combined(w, perf_side(own, perf, rules), per_request / fold.total(perf)), profiles
        return w, profiles
    return weighted(profiles, per_request, kernel, rules), profiles


def cpu_findings(store: Store, cells: list[dict]) -> dict[int, list[dict[str, Any]]]:
    """The CPU findings of a run's cells, by cell id (as the diagnosis's findings are stored)."""
    ok = [c for c in cells if c["status"] == "ok" and cpu_us(c) is not None]
    fastest: dict[tuple[str, str], dict] = {}
    for c in ok:
        key = (c["scenario"], language_of(c["driver"]))
        if key not in fastest or cpu_us(c) < cpu_us(fastest[key]):
            fastest[key] = c
    out: dict[int, list[dict[str, Any]]] = {}
    for c in ok:
        best = fastest[(c["scenario"], language_of(c["driver"]))]
        if best is not c and cpu_us(c) >= GAP * cpu_us(best):
            out.setdefault(c["id"], []).append(finding(store, c, best))
        if (harness := harness_finding(c)) is not None:
            out.setdefault(c["id"], []).append(harness)
    return out


def harness_finding(cell: dict) -> dict[str, Any] | None:
    """The lab's own driver code over HARNESS_SHOWN of a profiled cell's CPU: part of its figure
    is the lab's, not the library's."""
    layers = (cell.get("figures") or {}).get("layers") or {}
    share = next((s for s in layers.get("shares", []) if s["layer"] == "harness"), None)
    if share is None or share["share"] <= HARNESS_SHOWN:
        return None
    return {"rule": "harness-share", "severity": "info",
            "title": f"The lab's driver code holds {share['share'] * 100:.0f} % of the CPU",
            "evidence": f"{share['us_per_request']:.1f} µs a request of the profiled trials in the driver's own code and "
                        f"its language's helper (drivers/{language_of(cell['driver'])}/_lib), by self time; "
                        + layers_line(cell),
            "fix": "Read this cell's CPU figure with that part set aside, or look at the helper's request path "
                   "(clientlab show --cell … --profile names its functions)."}


def finding(store: Store, slow: dict, fast: dict) -> dict[str, Any]:
    s_us, f_us = cpu_us(slow), cpu_us(fast)
    assert s_us is not None and f_us is not None
    title = (f"CPU a request {s_us / f_us:.1f}× the fastest {language_of(slow['driver'])} client's: "
             f"{s_us:.0f} µs against {fast['driver']}'s {f_us:.0f} µs")
    rules = Rules.load(language_of(slow["driver"]), _folder(store, slow))
    ws, profiles = profile_of(store, slow, rules, with_perf=True)
    wf, _ = profile_of(store, fast, Rules.load(language_of(fast["driver"]), _folder(store, fast)), with_perf=True)
    layers = layers_line(slow)
    if ws is None or wf is None:
        missing = " and ".join(d for d, w in ((slow["driver"], ws), (fast["driver"], wf)) if w is None)
        evidence = (f"{layers}; " if layers else "") + f"no profile of {missing} on {slow['scenario']} in this run"
        return {"rule": "cpu-gap", "severity": "warn", "title": title, "evidence": evidence,
                "fix": f"profile both: clientlab profile -d {slow['driver']},{fast['driver']} -s {slow['scenario']}",
                "paths": []}
    found = paths(ws, wf, rules)
    named = [(p, cause_of(p)) for p in found]
    parts = [f"{' → '.join(_short(f) for f in p.frames)}: +{p.us:.0f} µs"
             + (f" in {p.held_in}" if p.held_in and p.held_in != p.layer else "") + (f" ({c.id})" if c else "")
             for p, c in named[:4]]
    evidence = (f"{layers}. " if layers else "") + (
        "Paths that make the difference, extra µs a request: " + "; ".join(parts) if parts
        else "no single code path holds the difference: it is spread over the library")
    known = [c for _, c in named if c is not None]
    known += profile_causes(ws)
    seen: set[str] = set()
    known = [c for c in known if not (c.id in seen or seen.add(c.id))]
    fix = " ".join(f"{c.what[0].upper()}{c.what[1:]}: {c.fix}." for c in known) or (
        f"Compare the two flame graphs (clientlab report) for what {slow['driver']} does on each request "
        f"that {fast['driver']} does not.")
    return {"rule": "cpu-gap", "severity": "warn", "title": title, "evidence": evidence, "fix": fix,
            "paths": [{"frames": list(p.frames), "us_per_request": p.us, "slow_us": p.slow_us,
                       "fast_us": p.fast_us, "layer": p.layer, "held_in": p.held_in, "cause": c.id if c else None}
                      for p, c in named],
            "against": fast["driver"]}


def layers_line(cell: dict) -> str:
    """'where the CPU went in the profiled trials …: library 310 µs, kernel 90 µs, …' from a cell's
    layers: µs a request of its profiled trials, the profiler's own cost in them."""
    layers = (cell.get("figures") or {}).get("layers")
    if not layers:
        return ""
    shares = sorted((s for s in layers["shares"] if s["us_per_request"] >= 0.5), key=lambda s: -s["us_per_request"])
    return ("where the CPU went in the profiled trials (the profiler's cost included): "
            + ", ".join(f"{s['layer']} {s['us_per_request']:.0f} µs" for s in shares))


def _short(frame: str) -> str:
    symbol, _, module = frame.rpartition(" (")
    module = module.rstrip(")")
    return f"{symbol} ({module.rsplit('/', 1)[-1]})" if module else frame


def _folder(store: Store, cell: dict) -> str | None:
    """The driver's folder as its profile recorded it (its harness frames are named by it)."""
    from clientlab.store.profiles import cell_profiles

    rows = cell_profiles(store, cell["id"])
    return (rows[0].get("meta") or {}).get("folder") if rows else None
