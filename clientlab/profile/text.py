"""A cell's profile as text, 80 columns wide (`clientlab show RUN --cell D:S --profile`): its
layers in µs a request of its profiled trials (the profiler's own cost included), the harness's share, the top paths by self time, the profilers' cost and
blind spots."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from clientlab.profile.causes import language_of, profile_of
from clientlab.profile.folded import frames_of, from_text, total
from clientlab.profile.layers import HARNESS_SHOWN, NATIVE_AWARE, UNATTRIBUTED_TARGET, user_side
from clientlab.profile.rules import Rules
from clientlab.store.profiles import cell_profiles

if TYPE_CHECKING:
    from clientlab.store import Store

WIDTH = 80
TOP = 10
CALLERS = 2   # a path is its leaf and this many callers


def _fit(text: str, width: int = WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _short(frame: str) -> str:
    symbol, _, module = frame.rpartition(" (")
    module = module.rstrip(")")
    return f"{symbol} ({module.rsplit('/', 1)[-1]})" if symbol else frame


def top_paths(store: Store, cell: dict[str, Any], n: int = TOP) -> list[tuple[float, float, list[str]]]:
    """(µs a request, share, frames leaf first) of the heaviest paths by self time."""
    rows = cell_profiles(store, cell["id"])
    folder = (rows[0].get("meta") or {}).get("folder") if rows else None
    rules = Rules.load(language_of(cell["driver"]), folder)
    w, _ = profile_of(store, cell, rules)
    if w is None:
        return []
    paths: Counter[tuple[str, ...]] = Counter()
    for stack, count in w.folded.items():
        fr = frames_of(stack)
        paths[tuple(reversed(fr[-1 - CALLERS:]))] += count * w.us_per_sample
    whole = w.us_per_request or 1.0
    return [(us, us / whole, list(p)) for p, us in paths.most_common(n)]


def render(store: Store, cell: dict[str, Any]) -> str:
    figs = cell.get("figures") or {}
    layers = figs.get("layers")
    head = f"{cell['driver']} × {cell['scenario']} — CPU profile"
    if not layers:
        notes = [n for n in figs.get("notes") or [] if n.startswith("no profile")]
        return "\n".join([head, "  " + (notes[0] if notes else "not profiled in this run: clientlab profile "
                                        f"-d {cell['driver']} -s {cell['scenario']}")])
    prof = figs.get("profile") or {}
    lines = [head, f"  {layers['profiler']}, {layers['samples']:,} samples in {prof.get('trials', '?')} profiled "
                   f"trial(s) of {prof.get('requests', '?')} requests"]
    split = _split_by(store, cell, layers)
    if split:
        lines.append(_fit(split, 10_000))
    cost = []
    if layers.get("overhead") is not None:
        cost.append(f"wall {layers['overhead'] * 100:+.0f} %")
    if prof.get("cpu_overhead") is not None:
        cost.append(f"CPU {prof['cpu_overhead'] * 100:+.0f} %")
    if cost:
        lines.append(_fit("  profiling cost against the timed trials: " + ", ".join(cost)))
    total_us = sum(s["us_per_request"] for s in layers["shares"])
    lines.extend(_basis(total_us, prof.get("cpu_overhead")))
    for s in layers["shares"]:
        if s["share"] <= 0 and s["layer"] not in ("harness", "unattributed"):
            continue
        bar = "█" * round(s["share"] * 30)
        lines.append(_fit(f"    {s['layer']:<13}{s['us_per_request']:>9,.1f} µs {s['share'] * 100:>5.1f} %  {bar}"))
    share = {s["layer"]: s["share"] for s in layers["shares"]}
    if share.get("harness", 0) > HARNESS_SHOWN:
        lines.append(f"  harness (the lab's driver code) {share['harness'] * 100:.1f} %: over "
                     f"{HARNESS_SHOWN * 100:.0f} %, part of this cell's figure is the lab's")
    if share.get("unattributed", 0) > UNATTRIBUTED_TARGET:
        lines.append(_fit(f"  unattributed {share['unattributed'] * 100:.1f} %: over the "
                          f"{UNATTRIBUTED_TARGET * 100:.0f} % target (frames no rule places)"))
    paths = top_paths(store, cell)
    if paths:
        lines.append("  top paths by self time (profiled µs a request, leaf ← callers):")
        for us, sh, frames in paths:
            lines.append(_fit(f"  {us:>8,.1f} {sh * 100:>5.1f} %  " + " ← ".join(_short(f) for f in frames)))
    for name, text in (prof.get("blind_spots") or {}).items():
        lines.append(_fit(f"  {name} cannot see: {text}", 10_000))
    return "\n".join(_wrap(line) for line in lines)


def _split_by(store: Store, cell: dict[str, Any], layers: dict[str, Any]) -> str | None:
    """How many samples split the CPU outside the kernel, where a profiler that sees native frames
    (py-spy) stands beside perf: only its samples outside a system call count, and it samples wall
    time, so a driver sharing a busy core may leave a handful of them, a sample then several points
    of a layer's share; perf's count beside them says nothing of it."""
    rows = {r["profiler"]: r for r in cell_profiles(store, cell["id"])}
    name = next((n for n in sorted(NATIVE_AWARE) if n in rows), None)
    if name is None or "perf" not in rows:
        return None
    rules = Rules.load(language_of(cell["driver"]), (rows[name].get("meta") or {}).get("folder"))
    folded = from_text(rows[name]["folded"])
    own = total(user_side(folded, rules))
    if not own:
        return None
    kernel = next((s["share"] for s in layers["shares"] if s["layer"] == "kernel"), 0.0)
    return (f"  the CPU outside the kernel split by {name}'s {own:,} sample{'s' if own > 1 else ''} outside a system call "
            f"(of its {total(folded):,}): one is {(1 - kernel) / own * 100:.1f} points of a layer's share")


def _basis(total_us: float, cpu_overhead: float | None) -> list[str]:
    """What the layers' µs are: the profiled trials' CPU a request, the profiler's own cost in it
    (a tracer such as NYTProf doubles it), beside the timed trials' figure. They are not scaled to
    the timed trials' CPU: a profiler's cost does not fall on each layer in proportion (NYTProf's
    own C code is in the runtime layer), so a scaled layer would be a figure nobody measured."""
    timed = (f" (the timed trials, the cell's figure: {total_us / (1 + cpu_overhead):,.1f} µs)"
             if cpu_overhead is not None and cpu_overhead > -1 else "")
    return ["  CPU a request in the profiled trials, the profiler's own cost included:",
            f"  {total_us:,.1f} µs{timed}; by layer:"]


def _wrap(line: str) -> str:
    if len(line) <= WIDTH:
        return line
    import textwrap
    return "\n".join(textwrap.wrap(line, WIDTH, subsequent_indent="      "))
