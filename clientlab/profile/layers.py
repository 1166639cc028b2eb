"""Where a profiled trial's CPU went, in layers: each sample in one layer (rules.py), the shares
turned into µs a request with the CPU the lab measured for the trial (the cell's cgroup)."""

from __future__ import annotations

from collections import Counter

from clientlab.profile.folded import Folded, frames_of, total
from clientlab.profile.model import LAYERS, Layers, LayerShare
from clientlab.profile.rules import Rules, split_frame

NATIVE_AWARE = {"py-spy"}   # language profilers that see the native frames under the language's (--native)
HARNESS_SHOWN = 0.05   # the harness's share is shown for every cell where it is over this
UNATTRIBUTED_TARGET = 0.10


def _kernel_mode(stack: str) -> bool:
    fr = frames_of(stack)
    return bool(fr) and split_frame(fr[-1])[1] == "kernel"


def counts(profiles: dict[str, Folded], rules: Rules) -> tuple[str, int, dict[str, float]]:
    """(the profilers' name, samples, share of each layer) from one trial's profiles. perf alone:
    its samples. perf beside a language's profiler (py-spy): the kernel's part of the CPU from perf
    (the samples whose leaf is in the kernel: that profiler sees no kernel frames), the rest split
    as the language's profiler saw it (it names the interpreted code)."""
    perf = profiles.get("perf")
    own = {name: f for name, f in profiles.items() if name != "perf" and total(f)}
    if perf is None and not own:
        return "none", 0, {}
    if not own:
        assert perf is not None
        n = total(perf)
        c = rules.classify(perf)
        return "perf", n, {layer: c[layer] / n for layer in LAYERS} if n else {}
    name, lang = next(iter(own.items()))
    if name not in NATIVE_AWARE and perf is not None and total(perf):
        return _beside_perf(name, perf, lang, rules)
    lang_counts = rules.classify(lang)
    if perf is not None and total(perf):
        # its samples in (or waiting in) a system call: the kernel's part comes from perf
        lang_counts["kernel"] = 0
    n_lang = sum(lang_counts.values())
    if not n_lang:
        return "perf", total(perf or {}), {layer: c / total(perf) for layer, c in rules.classify(perf).items()} if perf else {}
    if perf is None or not total(perf):
        return name, n_lang, {layer: lang_counts[layer] / n_lang for layer in LAYERS}
    n_perf = total(perf)
    kernel_side: Counter[str] = Counter()
    for stack, n in perf.items():
        if _kernel_mode(stack):
            kernel_side[rules.layer_of(stack)] += n
    k = sum(kernel_side.values()) / n_perf
    shares = {layer: kernel_side[layer] / n_perf + (1 - k) * lang_counts[layer] / n_lang for layer in LAYERS}
    return f"perf+{name}", n_perf + n_lang, shares


def _perf_named(perf: Folded, rules: Rules) -> dict[str, float]:
    """The share of perf's samples that a rule places firmly (rules.Rules.placed), per layer: the
    kernel, TLS and compression libraries, the allocator, libcurl, the collector, a JIT-compiled
    method of a perf map. The rest is the interpreter (or JIT code) running the language's code."""
    named: Counter[str] = Counter()
    for stack, n in perf.items():
        layer, firm = rules.placed(stack)
        if firm and layer != "unattributed":
            named[layer] += n
    n_perf = total(perf)
    return {layer: named[layer] / n_perf for layer in LAYERS}


def _beside_perf(name: str, perf: Folded, lang: Folded, rules: Rules) -> tuple[str, int, dict[str, float]]:
    """perf beside a profiler of the language's frames alone (rbspy, excimer, NYTProf, JFR): what
    perf places firmly from perf; the rest, the interpreter running the language's code, split as
    the language's profiler saw that code (its samples in a system call left out: the kernel is
    perf's)."""
    native = _perf_named(perf, rules)
    lang_counts = rules.classify(own_side(name, lang, rules))
    n_lang = sum(lang_counts.values())
    if not n_lang:
        n = total(perf)
        return "perf", n, {layer: c / n for layer, c in rules.classify(perf).items()}
    rest = 1 - sum(native.values())
    shares = {layer: native.get(layer, 0.0) + rest * lang_counts[layer] / n_lang for layer in LAYERS}
    return f"perf+{name}", total(perf) + n_lang, shares


def own_side(name: str, folded: Folded, rules: Rules) -> Folded:
    """The samples of a language's profiler that stand for CPU: without those in (or waiting in)
    a system call, whose time is the kernel's (perf's)."""
    return user_side(folded, rules)


def own_covers(name: str, profiles: dict[str, Folded], rules: Rules) -> float:
    """The share of the CPU the language profiler's own_side stands for (perf's samples alone
    give the rest, perf_side): 1 less the kernel's share (py-spy, which sees native frames), or
    less all that perf places firmly (a profiler of the language's frames alone)."""
    perf = profiles.get("perf")
    if not perf or not total(perf):
        return 1.0
    return 1 - total(perf_side(name, perf, rules)) / total(perf)


def perf_side(name: str, perf: Folded, rules: Rules) -> Folded:
    """perf's samples of the CPU that the language profiler's own_side does not stand for: those
    in the kernel (beside py-spy), or all that a rule places firmly (beside a profiler of the
    language's frames alone: the kernel, libcurl, TLS, the allocator, the collector, a method of
    a JIT's perf map)."""
    if name in NATIVE_AWARE:
        return {stack: n for stack, n in perf.items() if _kernel_mode(stack)}
    out: Folded = {}
    for stack, n in perf.items():
        layer, firm = rules.placed(stack)
        if firm and layer != "unattributed":
            out[stack] = n
    return out


def user_side(folded: Folded, rules: Rules) -> Folded:
    """A language profiler's samples without those in (or waiting in) a system call."""
    return {stack: n for stack, n in folded.items() if rules.layer_of(stack) != "kernel"}


def layers(profiles: dict[str, Folded], rules: Rules, cpu_s: float, requests: int,
           overhead: float | None) -> Layers:
    """The Layers of a profiled trial (or several, merged): `cpu_s` their CPU, `requests` theirs."""
    name, samples, shares = counts(profiles, rules)
    per_request_us = cpu_s / requests * 1e6 if requests else 0.0
    return Layers(name, samples, overhead,
                  tuple(LayerShare(layer, round(per_request_us * shares.get(layer, 0.0), 3),
                                   round(shares.get(layer, 0.0), 5)) for layer in LAYERS))
