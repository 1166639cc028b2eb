"""Two cells' profiles compared per request (Brendan Gregg's `difffolded`, in µs): which code paths
of the slower one account for its extra CPU.

Each profile's samples are weighted to µs a request: the profiled trials' CPU a request (the
cell's cgroup) spread over its samples; a language profiler that sees no kernel (py-spy) covers
the user part of that CPU only (the kernel's share comes from perf). Frames are compared by name:
a frame the faster cell does not have counts whole."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from clientlab.profile.folded import Folded, frames_of, total
from clientlab.profile.layers import own_side
from clientlab.profile.rules import Rules

MIN_PATH_US = 1.0       # a path is named when it accounts for this many µs a request…
MIN_PATH_SHARE = 0.05   # …and this share of the gap
MAX_PATHS = 6


@dataclass(frozen=True)
class Weighted:
    """One cell's primary profile, each sample worth `us_per_sample` µs a request."""

    folded: Folded
    us_per_sample: float

    @property
    def us_per_request(self) -> float:
        return total(self.folded) * self.us_per_sample


@dataclass(frozen=True)
class Path:
    frames: tuple[str, ...]   # caller first; the last one holds the extra CPU
    us: float                 # extra µs a request under the last frame (slow − fast)
    slow_us: float
    fast_us: float
    layer: str


def weighted(profiles: dict[str, Folded], cpu_us_per_request: float, kernel_share: float,
             rules: Rules) -> Weighted | None:
    """The profile the differential reads: the language's own profiler where there is one (it
    names the library's functions; its samples in what perf names left out, perf's share of the
    CPU being `kernel_share`: layers.own_covers), else perf."""
    own = {k: v for k, v in profiles.items() if k != "perf" and total(v)}
    if own:
        name, lang = next(iter(own.items()))
        f = own_side(name, lang, rules) if "perf" in profiles else lang
        if total(f):
            return Weighted(f, cpu_us_per_request * (1 - kernel_share) / total(f))
    perf = profiles.get("perf")
    if perf and total(perf):
        return Weighted(perf, cpu_us_per_request / total(perf))
    return None


SCALE = 1000   # a combined profile counts thousandths of a µs a request
# a profiler's own code in the process it profiles (NYTProf.so, excimer.so): what it costs is the
# profile's, and grows with the client's calls, so it is no path of the client's
PROFILER_OWN = re.compile(r"\((NYTProf|excimer)\.so\)")


def combined(w: Weighted, perf_part: Folded, perf_us_per_sample: float) -> Weighted:
    """`w`, a language profiler's own side, with the stacks of perf's samples it does not stand
    for (layers.perf_side), each in µs a request: a path that only perf saw (a JIT-compiled
    method the language profiler could not walk, libcurl, the kernel) then takes part in the
    differential (a tracer's own code left out: PROFILER_OWN). Counted in thousandths of a µs a
    request."""
    out: Counter[str] = Counter()
    for stack, n in w.folded.items():
        out[stack] += round(n * w.us_per_sample * SCALE)
    for stack, n in perf_part.items():
        if not PROFILER_OWN.search(stack):
            out[stack] += round(n * perf_us_per_sample * SCALE)
    return Weighted({stack: n for stack, n in out.items() if n}, 1 / SCALE)


def inclusive_us(w: Weighted) -> Counter[str]:
    out: Counter[str] = Counter()
    for stack, n in w.folded.items():
        for f in set(frames_of(stack)):
            out[f] += n * w.us_per_sample
    return out


def self_us(w: Weighted) -> Counter[str]:
    out: Counter[str] = Counter()
    for stack, n in w.folded.items():
        fr = frames_of(stack)
        if fr:
            out[fr[-1]] += n * w.us_per_sample
    return out


def _below(w: Weighted) -> dict[str, set[str]]:
    """Each frame's callees at any depth."""
    out: dict[str, set[str]] = {}
    for stack in w.folded:
        fr = frames_of(stack)
        for i, f in enumerate(fr):
            out.setdefault(f, set()).update(fr[i + 1:])
    return out


def paths(slow: Weighted, fast: Weighted, rules: Rules) -> list[Path]:
    """The code paths of `slow` that account for its extra CPU a request over `fast`, largest first.

    Frames whose inclusive CPU grew by at least MIN_PATH_US and MIN_PATH_SHARE of the gap are
    candidates (not the main loop, under nearly every sample). Each sample then belongs to the
    deepest candidate on its stack, in both profiles, so that a caller keeps only what none of
    its callees explains: a path ends at the frame that holds the extra CPU, and is named with
    its callers as the slow profile calls it most."""
    gap = slow.us_per_request - fast.us_per_request
    if gap <= 0:
        return []
    s_incl, f_incl = inclusive_us(slow), inclusive_us(fast)
    whole = slow.us_per_request
    threshold = max(MIN_PATH_US, MIN_PATH_SHARE * gap)
    candidates = {f for f, us in s_incl.items() if us - f_incl.get(f, 0.0) >= threshold
                  and us < 0.9 * whole and rules.layer_of(f) != "unattributed"}
    owned_slow, owned_fast = _owned(slow, candidates), _owned(fast, candidates)
    owned = {c: owned_slow.get(c, 0.0) - owned_fast.get(c, 0.0) for c in candidates}
    kept = sorted((c for c in candidates if owned[c] >= threshold), key=lambda c: -owned[c])[:MAX_PATHS]
    return [Path((*_callers(slow, c), c), round(owned[c], 2), round(s_incl[c], 2), round(f_incl.get(c, 0.0), 2),
                 rules.layer_of(c)) for c in kept]


def _owned(w: Weighted, candidates: set[str]) -> Counter[str]:
    """µs a request of each candidate's samples, each sample to the deepest candidate on its stack."""
    out: Counter[str] = Counter()
    for stack, n in w.folded.items():
        for f in reversed(frames_of(stack)):
            if f in candidates:
                out[f] += n * w.us_per_sample
                break
    return out


def _callers(w: Weighted, frame: str, depth: int = 2) -> tuple[str, ...]:
    """The `depth` frames that call `frame` in most of its samples, caller first."""
    chains: Counter[tuple[str, ...]] = Counter()
    for stack, n in w.folded.items():
        fr = frames_of(stack)
        if frame in fr:
            i = fr.index(frame)
            chains[tuple(fr[max(0, i - depth):i])] += n
    return chains.most_common(1)[0][0] if chains else ()


def folded_diff(slow: Weighted, fast: Weighted) -> dict[str, tuple[float, float]]:
    """Every stack of either profile with (slow µs, fast µs) a request: the differential flame
    graph's input (drawn with the slow cell's shape, coloured by what grew and what shrank)."""
    out: dict[str, tuple[float, float]] = {}
    for stack, n in slow.folded.items():
        out[stack] = (n * slow.us_per_sample, 0.0)
    for stack, n in fast.folded.items():
        s, _ = out.get(stack, (0.0, 0.0))
        out[stack] = (s, n * fast.us_per_sample)
    return out
