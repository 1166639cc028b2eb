"""Two cells' profiles compared per request (Brendan Gregg's `difffolded`, in µs): which code paths
of the slower one account for its extra CPU.

Each profile's samples are weighted to µs a request: the profiled trials' CPU a request (the
cell's cgroup) spread over its samples; a language profiler that sees no kernel (py-spy) covers
the user part of that CPU only (the kernel's share comes from perf). Frames are compared by name:
a frame the faster cell does not have counts whole."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from clientlab.profile.folded import Folded, frames_of, total
from clientlab.profile.layers import user_side
from clientlab.profile.rules import Rules

MIN_PATH_US = 1.0       # a path is named when it accounts for this many µs a request…
MIN_PATH_SHARE = 0.05   # …and this share of the gap
ABSORB = 0.8            # a frame whose extra CPU is mostly (this share) under one named callee is part of its path
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
    names the library's functions; its samples in system calls left out, the kernel's share
    `kernel_share` being perf's), else perf."""
    own = {k: v for k, v in profiles.items() if k != "perf" and total(v)}
    if own:
        f = user_side(next(iter(own.values())), rules) if "perf" in profiles else next(iter(own.values()))
        if total(f):
            return Weighted(f, cpu_us_per_request * (1 - kernel_share) / total(f))
    perf = profiles.get("perf")
    if perf and total(perf):
        return Weighted(perf, cpu_us_per_request / total(perf))
    return None


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
    """The code paths of `slow` that account for its extra CPU a request over `fast`, largest first."""
    gap = slow.us_per_request - fast.us_per_request
    if gap <= 0:
        return []
    s_incl, f_incl = inclusive_us(slow), inclusive_us(fast)
    whole = slow.us_per_request
    threshold = max(MIN_PATH_US, MIN_PATH_SHARE * gap)
    diff = {f: us - f_incl.get(f, 0.0) for f, us in s_incl.items()}
    # a frame under (nearly) every sample is the program's main loop: it names no path
    candidates = {f for f, d in diff.items() if d >= threshold and s_incl[f] < 0.9 * whole
                  and rules.layer_of(f) != "unattributed"}
    below = _below(slow)
    absorbed: dict[str, str] = {}
    for c in sorted(candidates, key=lambda f: -diff[f]):
        deeper = [d for d in candidates if d != c and d in below.get(c, ()) and diff[d] >= ABSORB * diff[c]]
        if deeper:
            absorbed[c] = max(deeper, key=lambda d: (len(below.get(c, ())) - len(below.get(d, ())), diff[d]))
    kept = [c for c in candidates if c not in absorbed]
    out = []
    for k in sorted(kept, key=lambda f: -diff[f])[:MAX_PATHS]:
        chain = [c for c in absorbed if _ends_in(c, k, absorbed)]
        chain.sort(key=lambda c: -len(below.get(c, ())))
        out.append(Path(tuple([*chain[-2:], k]), round(diff[k], 2), round(s_incl[k], 2),
                        round(f_incl.get(k, 0.0), 2), rules.layer_of(k)))
    return out


def _ends_in(frame: str, end: str, absorbed: dict[str, str]) -> bool:
    seen = set()
    while frame in absorbed and frame not in seen:
        seen.add(frame)
        frame = absorbed[frame]
    return frame == end


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
