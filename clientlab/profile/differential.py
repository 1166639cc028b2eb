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
from clientlab.profile.rules import Rules, split_frame

MIN_PATH_US = 1.0       # a path is named when it accounts for this many µs a request…
MIN_PATH_SHARE = 0.05   # …and this share of the gap
MAX_PATHS = 6

# A frame that says nothing of whose code ran: no symbol (a stripped library's `? (libcurl.so.4)`,
# the unwound root of a thread, `[unknown]`), or the runtime's own plumbing that every sample of
# the language passes through (the interpreter's dispatch loop, its call machinery, a thread's
# start). Such a frame is never a path's end: its samples go to the nearest frame above it that is
# named, so a body copied in an unnamed libc function is named by the library function that
# copied it. Nor is it named as a path's caller. V8 names an anonymous function by its file alone
# (`JS: node:internal/deps/undici/undici`, the position dropped on folding): no name to look up,
# and every closure of a bundle folds into it. Go's runtime has no interpreter but the same kind of
# plumbing: a goroutine's root and stack switches (`runtime.goexit`, `mcall`, `systemstack`), and
# the allocator's entry points every `new`, `make`, `append` and string conversion goes through
# (`runtime.newobject → runtime.mallocgc → …`), whose samples are the memory of the library
# function that allocated. Rust's is a thread's and the process's start (`__rust_begin_short_backtrace`,
# `FnOnce::call_once{{vtable.shim}}`, `lang_start`), the poll of a future that only wraps another
# (futures' `Map`, a `Pin`, a tokio task's harness), a thread-local's `with`, and the curl crate's
# `panic::catch` around every libcurl callback.
UNNAMED = re.compile(r"^(\?|\[unknown\]|0x[0-9a-f]+|JS:(\s.*)?|)$")
PLUMBING = re.compile(
    r"^(_PyEval_EvalFrame\w*|_PyEval_Vector|_PyFunction_Vectorcall|_?PyObject_(Vectorcall|Call)\w*|"
    r"method_vectorcall\w*|cfunction_\w*call\w*|slot_tp_\w+|vectorcall_\w+|"
    r"execute_ex|zend_execute\w*|ZEND_\w+_HANDLER|php_execute_script|Perl_runops_\w+|Perl_pp_entersub|"
    r"vm_exec\w*|rb_vm_exec|vm_call\w*|rb_funcall\w*|rb_yield\w*|rb_ary_each|ruby_run_node|rb_ec_exec_node|rb_protect|rb_ensure|"
    r"Builtins_(JSEntry\w*|InterpreterEntryTrampoline|CallFunction\w*|Call_\w+|"
    r"InterpreterPushArgs\w*|ArgumentsAdaptorTrampoline|AsyncFunctionAwaitResolveClosure|RunMicrotasks\w*)|"
    r"_PyRun_\w+|run_mod|run_eval_code_obj|PyEval_EvalCode|pymain_\w+|Py_RunMain|Py_BytesMain|"
    r"__libc_start\w*|_start|start_thread|clone3?|thread_start|"
    r"runtime\.(goexit[\w.]*|main|mcall[\w.]*|systemstack[\w.]*|mstart[\w.]*|morestack[\w.]*|asmcgocall[\w.]*|"
    r"newobject|mallocgc\w*|makeslice\w*|growslice|makemap\w*|convT\w*|rawstring\w*|rawbyteslice|"
    r"slicebytetostring|concatstring\w*|memmove[\w.]*|memclrNoHeapPointers[\w.]*|nextFreeFast)|"
    r"std::rt::lang_start\w*(::\{\{closure\}\})?|std::sys::backtrace::__rust_begin_short_backtrace|"
    r"core::ops::function::FnOnce::call_once(\{\{vtable\.shim\}\})?|<std::sys::thread::unix::Thread>::new::thread_start|"
    r"std::thread::local::LocalKey<T>::with|curl::panic::catch|tokio::runtime::task::(harness::Harness|core::Core)<T,S>::poll|"
    r"<(core::pin::Pin<P>|futures_util::future::future::(map::)?Map<Fut,F>) as core::future::future::Future>::poll)$")


def telling(frame: str, rules: Rules) -> bool:
    """Whether a frame names code a reader can look up: a symbol, a rule's layer, not plumbing."""
    symbol, _ = split_frame(frame)
    return (not UNNAMED.match(symbol.strip()) and not PLUMBING.match(symbol)
            and rules.layer_of(frame) != "unattributed")


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
    held_in: str = ""         # the layer most of the extra µs sits in (its samples' layer)


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
    candidates (not the main loop, under nearly every sample, nor a frame that says nothing:
    `telling`). Each sample then belongs to the deepest candidate on its stack, in both profiles,
    so that a caller keeps only what none of its callees explains: a path ends at the frame that
    holds the extra CPU, and is named with the named callers the slow profile calls it through
    most, and with the layer its extra µs sit in (the library's read function, its extra in
    memory: a copy)."""
    gap = slow.us_per_request - fast.us_per_request
    if gap <= 0:
        return []
    s_incl, f_incl = inclusive_us(slow), inclusive_us(fast)
    whole = slow.us_per_request
    threshold = max(MIN_PATH_US, MIN_PATH_SHARE * gap)
    candidates = {f for f, us in s_incl.items() if us - f_incl.get(f, 0.0) >= threshold
                  and us < 0.9 * whole and telling(f, rules)}
    owned_slow, owned_fast = _owned(slow, candidates, rules), _owned(fast, candidates, rules)
    owned = {c: sum(owned_slow.get(c, {}).values()) - sum(owned_fast.get(c, {}).values()) for c in candidates}
    kept = sorted((c for c in candidates if owned[c] >= threshold), key=lambda c: -owned[c])[:MAX_PATHS]
    return [Path((*_callers(slow, c, rules), c), round(owned[c], 2), round(s_incl[c], 2),
                 round(f_incl.get(c, 0.0), 2), rules.layer_of(c), _held_in(owned_slow.get(c, {}), owned_fast.get(c, {})))
            for c in kept]


def _owned(w: Weighted, candidates: set[str], rules: Rules) -> dict[str, Counter[str]]:
    """µs a request of each candidate's samples, by the samples' layer, each sample to the
    deepest candidate on its stack."""
    out: dict[str, Counter[str]] = {}
    for stack, n in w.folded.items():
        for f in reversed(frames_of(stack)):
            if f in candidates:
                out.setdefault(f, Counter())[rules.layer_of(stack)] += n * w.us_per_sample
                break
    return out


def _held_in(slow: Counter[str], fast: Counter[str]) -> str:
    """The layer that holds the most of a path's extra µs."""
    grown = {layer: us - fast.get(layer, 0.0) for layer, us in slow.items()}
    return max(grown, key=lambda layer: grown[layer]) if grown else ""


def _callers(w: Weighted, frame: str, rules: Rules, depth: int = 2) -> tuple[str, ...]:
    """The `depth` telling frames nearest above `frame` (its deepest place on a stack) in most of
    its samples, caller first: the interpreter's call machinery and unnamed frames between them
    are passed over, and so are the runtime's generic C functions where the language's own code
    calls it (`SocketIO.readinto` rather than the buffered reader's C code under it), and for a
    path in the kernel the kernel's own frames and libc's system-call wrappers, where user code
    called them: a context switch is named by the code that waited (Asio's
    `scheduler::do_run_one`), not by `schedule → __schedule`."""
    in_kernel = rules.layer_of(frame) == "kernel"
    chains: Counter[tuple[str, ...]] = Counter()
    for stack, n in w.folded.items():
        fr = frames_of(stack)
        if frame in fr:
            i = len(fr) - 1 - fr[::-1].index(frame)
            above = []
            for f in reversed(fr[:i]):   # a recursion's own frames are no callers
                if f != frame and telling(f, rules) and (not above or above[-1] != f):
                    above.append(f)
            own = [f for f in above if not rules.generic(f)]
            user = [f for f in own if rules.layer_of(f) != "kernel"] if in_kernel else []
            chains[tuple(reversed((user or own or above)[:depth]))] += n
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
