"""Folded stacks: the one format every profiler's output is turned into (Brendan Gregg's
`stackcollapse-*`), and everything after it reads: layers, differential graphs, flame graphs.

A profile is a mapping from a stack (frames root first, joined by ";") to its sample count. A
frame is `symbol (module)`: the module a file of the language (`requests/sessions.py`) or a
shared object (`libssl.so.3`), `kernel` for the kernel's own frames. Line numbers are dropped, so
that two profiles of one code path fold to the same stacks; paths are shortened (below the lab's
checkout, below site-packages, `<stdlib>/` for the runtime's own library)."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable

from clientlab.paths import ROOT

Folded = dict[str, int]

_LINE = re.compile(r":\d+\)$")
_SITE = re.compile(r"^.*/(?:site|dist)-packages/")
_STDLIB = re.compile(r"^.*/lib/python3\.\d+/")
_SHARED = re.compile(r"\.so(\.[\d.]+)?$")
# Ruby's and PHP's library folders, shortened as site-packages are: Ruby's standard library
# (/usr/lib/ruby/3.1.0/net/http.rb → <stdlib>/net/http.rb), Debian's Ruby packages (vendor_ruby/...),
# installed gems (gems/NAME-V/lib/...), Debian's PHP packages (php/GuzzleHttp/...)
_SCRIPT_LIBS = ((re.compile(r"^/usr/lib/ruby/\d+\.\d+\.\d+/"), "<stdlib>/"),
                (re.compile(r"^/usr/lib/ruby/vendor_ruby/"), "vendor_ruby/"),
                (re.compile(r"^/.*/(?=gems/[^/]+/)"), ""),
                (re.compile(r"^/usr/share/(?=php/)"), ""))
_PERF_FRAME = re.compile(r"^\s*[0-9a-f]+\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)$")


_JIT_MAP = re.compile(r"^/tmp/perf-\d+\.map$")
# V8's perf-map names: "JS:*'name file:line:col" (the marks say which tier compiled it)
_V8 = re.compile(r"^(JS|LazyCompile|Function|Script|InterpretedFunction|Baseline|Maglev|Turbofan):[*~+'^]*")
_V8_POSITION = re.compile(r"(:\d+)+$")


def short_symbol(symbol: str) -> str:
    """A JIT-compiled function's name without its tier marks and source position, so that one
    function folds to one frame however often it was compiled."""
    m = _V8.match(symbol)
    if not m:
        return symbol
    return "JS:" + _V8_POSITION.sub("", symbol[m.end():])


def short_module(path: str) -> str:
    """A module's path as profiles show it: relative to the checkout, below site-packages, or
    `<stdlib>/...`; a shared object by its file name; the kernel as `kernel`."""
    if path.startswith("[kernel") or path in ("[vdso]", "[unknown]"):
        return "kernel" if path.startswith("[kernel") else path.strip("[]")
    if _JIT_MAP.match(path):
        return "jit"
    if path.startswith("/") and _SHARED.search(path):
        return path.rsplit("/", 1)[-1]
    if path.startswith("/"):
        path = os.path.normpath(path)
    root = str(ROOT) + "/"
    if path.startswith(root):
        path = path[len(root):]
        return _SITE.sub("", path) if "-packages/" in path else path
    if "-packages/" in path:
        return _SITE.sub("", path)
    if _STDLIB.match(path):
        return "<stdlib>/" + _STDLIB.sub("", path)
    for pattern, prefix in _SCRIPT_LIBS:
        if m := pattern.match(path):
            return prefix + path[m.end():]
    if path.startswith("/"):
        return path.rsplit("/", 1)[-1]
    return path


_JAVA = re.compile(r"^(?:\S+ )?(?P<name>[\w$.<>]+)\(.*\)$")


def frame(symbol: str, module: str) -> str:
    short = short_module(module)
    symbol = short_symbol(symbol)
    if short == "jit" and (m := _JAVA.match(symbol)):
        symbol = m["name"]   # a JVM's perf map: "ret pkg.Class.method(args)" → pkg.Class.method
    return f"{symbol.replace(';', ':')} ({short})"


def _pyspy_frame(text: str) -> str:
    """`func (path:line)` or `func (libfoo.so)` or `0x7f.. (libfoo.so)` → `symbol (module)`."""
    text = _LINE.sub(")", text.strip())
    symbol, sep, rest = text.rpartition(" (")
    if not sep:
        return text
    if symbol.startswith("0x"):
        symbol = "?"
    return frame(symbol, rest[:-1])


def parse_pyspy(text: str) -> Folded:
    """py-spy's `--format raw` output (folded stacks, root first, a count per line)."""
    out: Counter[str] = Counter()
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [_pyspy_frame(f) for f in stack.split(";") if f]
        # py-spy writes the process and thread first when asked; those are not frames
        frames = [f for f in frames if not f.startswith(("process ", "thread "))]
        out[";".join(frames)] += int(count)
    return dict(out)


def _split_count(line: str) -> tuple[list[str], int] | None:
    stack, _, count = line.rstrip().rpartition(" ")
    if not stack or not count.isdigit():
        return None
    return stack.split(";"), int(count)


def parse_rbspy(text: str) -> Folded:
    """rbspy's `--format collapsed` (root first; a frame `name - /path/file.rb:LINE`, a C function
    with no file of its own `name - (unknown):0` or the like)."""
    out: Counter[str] = Counter()
    for line in text.splitlines():
        got = _split_count(line)
        if got is None:
            continue
        frames = []
        for f in got[0]:
            name, sep, where = f.rpartition(" - ")
            if not sep:
                name, where = f, ""
            path = re.sub(r":\d+$", "", where)
            frames.append(frame(name, path if path.startswith("/") else f"ruby:{path or '?'}"))
        out[";".join(frames)] += got[1]
    return dict(out)


def parse_excimer(text: str) -> Folded:
    """The folded stacks drivers/php/_lib writes from excimer's log: root first, a frame
    `Class::method (/path/file.php)`, an internal function `curl_exec (php)`."""
    out: Counter[str] = Counter()
    for line in text.splitlines():
        got = _split_count(line)
        if got is None:
            continue
        frames = []
        for f in got[0]:
            name, sep, where = f.rpartition(" (")
            frames.append(frame(name, where[:-1]) if sep else frame(f, "php"))
        out[";".join(frames)] += got[1]
    return dict(out)


def parse_nytprofcalls(text: str) -> Folded:
    """nytprofcalls' output (root first, Perl subs by package, the exclusive time in 100 ns ticks)
    → folded stacks in µs (a frame `LWP::UserAgent::request (perlsub)`; an anonymous sub of the
    lab's checkout, `main::__ANON__[/path/driver.pl:62]`, by its file)."""
    out: Counter[str] = Counter()
    for line in text.splitlines():
        got = _split_count(line)
        if got is None:
            continue
        frames = []
        for f in got[0]:
            anon = re.match(r"^(?P<sub>.*__ANON__)\[(?P<file>.*):\d+\]$", f)
            if anon and anon["file"].startswith(str(ROOT) + "/"):
                frames.append(frame(anon["sub"], anon["file"]))
            else:   # perf names the perl binary's own module `perl`: a sub's is `perlsub`
                frames.append(frame(anon["sub"] if anon else f, "perlsub"))
        us = got[1] // 10
        if us:
            out[";".join(frames)] += us
    return dict(out)


_ISO_UTC = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$")


def _utc_seconds(text: str) -> float:
    """A JFR time (`2026-11-27T13:46:36.647476253Z`, nanoseconds) as Unix seconds; NaN if not one."""
    from datetime import datetime, timezone

    m = _ISO_UTC.match(text)
    if not m:
        return float("nan")
    whole = datetime.strptime(m[1], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return whole + float(m[2] or 0)


def parse_jfr_json(text: str, window: tuple[float, float] | None = None) -> Folded:
    """`jfr print --json --events jdk.ExecutionSample` → folded stacks (a frame
    `package.Class.method (java)`, inlined ones included), one sample each; with `window` (Unix
    times), only the samples taken within it."""
    import json

    out: Counter[str] = Counter()
    events = (json.loads(text).get("recording") or {}).get("events") or []
    for event in events:
        values = event.get("values") or {}
        if window is not None and not window[0] <= _utc_seconds(str(values.get("startTime"))) <= window[1]:
            continue
        trace = values.get("stackTrace") or {}
        frames = []
        for f in reversed(trace.get("frames") or []):
            method = f.get("method") or {}
            cls = ((method.get("type") or {}).get("name") or "?").replace("/", ".")
            frames.append(frame(f"{cls}.{method.get('name', '?')}", "java"))
        if frames:
            out[";".join(frames)] += 1
    return dict(out)


# Rust's two manglings (legacy `_ZN…17h<hash>E`, perhaps with LLVM's `.llvm.N` suffix; v0 `_R…`).
# Debian's perf demangles both itself and drops the hashes; a perf built without a demangler
# leaves them mangled, and c++filt (binutils) keeps the legacy hash (`::h0123…`) and v0's crate
# disambiguators (`core[c1f1a4ba060b9bfa]::`). The layer rules and the differential match crate
# paths, so every Rust name is brought to perf's plain form.
_RUST_MANGLED = re.compile(r"^(_ZN[\w$.]*17h[0-9a-f]{16}E(\.llvm\.\d+)?|_R[0-9A-Z][0-9A-Za-z_]*)$")
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
_RUST_CRATE_ID = re.compile(r"(?<=\w)\[[0-9a-f]+\](?=::)")


def plain_rust(symbols: Iterable[str]) -> dict[str, str]:
    """Each Rust symbol among `symbols` that is not in perf's plain form → that form: mangled ones
    demangled by c++filt (left as they are where it is missing), the hash and crate
    disambiguators dropped."""
    import shutil
    import subprocess

    odd = sorted({s for s in symbols if _RUST_MANGLED.match(s) or _RUST_HASH.search(s) or _RUST_CRATE_ID.search(s)})
    if not odd:
        return {}
    demangled = odd
    mangled = [s for s in odd if _RUST_MANGLED.match(s)]
    cxxfilt = shutil.which("c++filt")
    if mangled and cxxfilt:
        done = subprocess.run([cxxfilt], input="\n".join(odd) + "\n", capture_output=True, text=True)
        lines = done.stdout.splitlines()
        if done.returncode == 0 and len(lines) == len(odd):
            demangled = lines
    return {s: _RUST_CRATE_ID.sub("", _RUST_HASH.sub("", d)) for s, d in zip(odd, demangled)}


def parse_perf_script(text: str) -> Folded:
    """`perf script -F comm,tid,ip,sym,dso` output (one block a sample, leaf first) → folded stacks,
    root first, the process's command name as the root frame (as stackcollapse-perf.pl does);
    Rust's symbols in perf's plain form wherever perf left them otherwise (plain_rust)."""
    lines = text.splitlines()
    plain = plain_rust(re.sub(r"\+0x[0-9a-f]+$", "", m["sym"]) for line in lines
                       if line[:1].isspace() and (m := _PERF_FRAME.match(line)))
    out: Counter[str] = Counter()
    comm: str | None = None
    frames: list[str] = []

    def flush() -> None:
        if comm is not None:
            out[";".join([f"{comm} (process)", *reversed(frames)])] += 1

    for line in lines:
        if not line.strip():
            flush()
            comm, frames = None, []
            continue
        if not line[0].isspace():
            flush()
            comm, frames = line.split()[0] if line.split() else "?", []
            continue
        m = _PERF_FRAME.match(line)
        if m:
            sym = re.sub(r"\+0x[0-9a-f]+$", "", m["sym"])
            sym = plain.get(sym, sym)
            frames.append(frame("?" if sym == "[unknown]" else sym, m["dso"]))
    flush()
    return dict(out)


def total(folded: Folded) -> int:
    return sum(folded.values())


def to_text(folded: Folded) -> str:
    """The stored form: one `stack count` a line, heaviest first."""
    return "".join(f"{stack} {n}\n" for stack, n in sorted(folded.items(), key=lambda kv: (-kv[1], kv[0])))


def from_text(text: str) -> Folded:
    out: Counter[str] = Counter()
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            out[stack] += int(count)
    return dict(out)


def frames_of(stack: str) -> list[str]:
    return stack.split(";") if stack else []


def merge(profiles: Iterable[Folded]) -> Folded:
    out: Counter[str] = Counter()
    for p in profiles:
        out.update(p)
    return dict(out)


def inclusive(folded: Folded) -> Counter[str]:
    """Samples under each frame (counted once a stack, however deep it recurses)."""
    out: Counter[str] = Counter()
    for stack, n in folded.items():
        for f in set(frames_of(stack)):
            out[f] += n
    return out


def self_counts(folded: Folded) -> Counter[str]:
    """Samples with each frame as the leaf."""
    out: Counter[str] = Counter()
    for stack, n in folded.items():
        fr = frames_of(stack)
        if fr:
            out[fr[-1]] += n
    return out
