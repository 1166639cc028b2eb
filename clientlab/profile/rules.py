"""Layer rules as data (rules/<language>.toml, then rules/common.toml), and the classifier that
puts each sample of a folded profile in one layer (the order of reading: rules/common.toml)."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from clientlab.paths import ROOT
from clientlab.profile.folded import Folded, frames_of
from clientlab.profile.model import LAYERS

RULES_DIR = Path(__file__).parent / "rules"
_FRAME = re.compile(r"^(?P<symbol>.*) \((?P<module>[^()]*)\)$")


@dataclass(frozen=True)
class Rule:
    layer: str
    module: re.Pattern[str] | None
    symbol: re.Pattern[str] | None
    defer: bool
    anywhere: bool

    def matches(self, symbol: str, module: str) -> bool:
        return ((self.module is None or self.module.search(module) is not None)
                and (self.symbol is None or self.symbol.search(symbol) is not None))


def split_frame(f: str) -> tuple[str, str]:
    m = _FRAME.match(f)
    return (m["symbol"], m["module"]) if m else (f, "")


@dataclass(frozen=True)
class Phase:
    """Where a language's helper runs the timed phase, for a profiler that sees its frames: a
    sample under the helper's message loop (`loop`) but under no frame of the timed phase
    (`timed`) was taken before `go` or after `done`."""

    loop: re.Pattern[str]
    timed: re.Pattern[str]

    def outside(self, stack: str) -> bool:
        frames = frames_of(stack)
        return (any(self.loop.search(f) for f in frames)
                and not any(self.timed.search(f) for f in frames))


class Rules:
    """The rules for one driver: its language's file, then the common one."""

    def __init__(self, rules: list[Rule], phase: Phase | None = None):
        self.rules = rules
        self.phase = phase
        self.anywhere = [r for r in rules if r.anywhere]
        self.each = [r for r in rules if not r.anywhere]
        self._cache: dict[str, Rule | None] = {}

    @classmethod
    def load(cls, language: str, driver_folder: Path | str | None = None) -> Rules:
        """`language`'s rules with `{lib}` and `{driver}` filled in for `driver_folder`."""
        lib = f"drivers/{language}/_lib"
        folder = Path(driver_folder) if driver_folder else None
        driver = (str(folder.resolve().relative_to(ROOT)) if folder and folder.resolve().is_relative_to(ROOT)
                  else str(folder) if folder else "\x00no-driver")
        phase = _phase(language)
        return cls([_compiled(r, lib, driver) for r in _raw(language)],
                   Phase(_filled(phase["loop"], lib, driver), _filled(phase["timed"], lib, driver)) if phase else None)

    def timed_phase(self, folded: Folded) -> tuple[Folded, int]:
        """The samples of the timed phase, and how many were left out: those the language's
        `[phase]` places in the helper's message loop outside the driver's timed phase (waiting
        for `go`, writing the report after `done`), which a sampler stopped by a signal after
        `done` still takes. Every sample is kept where the language names no phase (or the
        profiler sees no frame of it: perf's stacks of an interpreter)."""
        if self.phase is None:
            return folded, 0
        kept = {s: n for s, n in folded.items() if not self.phase.outside(s)}
        return kept, sum(folded.values()) - sum(kept.values())

    def _rule_for(self, f: str) -> Rule | None:
        if f not in self._cache:
            symbol, module = split_frame(f)
            self._cache[f] = next((r for r in self.each if r.matches(symbol, module)), None)
        return self._cache[f]

    def layer_of(self, stack: str) -> str:
        """The one layer a sample with this stack goes to."""
        return self.placed(stack)[0]

    def placed(self, stack: str) -> tuple[str, bool]:
        """The sample's layer, and whether a rule named it firmly (an `anywhere` rule or a frame's
        own rule) rather than by default (a `defer` rule with no caller placed, or no rule)."""
        frames = frames_of(stack)
        for f in reversed(frames):
            symbol, module = split_frame(f)
            for r in self.anywhere:
                if r.matches(symbol, module):
                    return r.layer, True
        deferred: str | None = None
        for f in reversed(frames):
            rule = self._rule_for(f)
            if rule is None:
                continue
            if not rule.defer:
                return rule.layer, True
            deferred = deferred or rule.layer
        return deferred or "unattributed", False

    def generic(self, frame: str) -> bool:
        """A frame that only a `defer` rule of the runtime places (the interpreter's C internals, a
        built-in type's C code): it works for whoever called it."""
        rule = self._rule_for(frame)
        return rule is not None and rule.defer and rule.layer == "runtime"

    def classify(self, folded: Folded) -> Counter[str]:
        """Samples per layer (every layer of LAYERS present, 0 where none)."""
        out: Counter[str] = Counter({layer: 0 for layer in LAYERS})
        for stack, n in folded.items():
            out[self.layer_of(stack)] += n
        return out


@lru_cache(maxsize=None)
def _raw(language: str) -> tuple[dict, ...]:
    out: list[dict] = []
    # a language on another's runtime (Kotlin on the JVM) names it in `then`: its own rules
    # first, then that language's, then the common ones
    read: list[str] = []
    name: str | None = language
    while name is not None and name not in read:
        read.append(name)
        path = RULES_DIR / f"{name}.toml"
        data = tomllib.loads(path.read_text()) if path.exists() else {}
        out += data.get("rule", [])
        name = data.get("then")
    if "common" not in read:
        out += tomllib.loads((RULES_DIR / "common.toml").read_text()).get("rule", [])
    for r in out:
        if r.get("layer") not in LAYERS:
            raise ValueError(f"layer rules: unknown layer {r.get('layer')!r} (one of {', '.join(LAYERS)})")
    return tuple(out)


@lru_cache(maxsize=None)
def _phase(language: str) -> dict | None:
    """The language's `[phase]` table (its own file's), or None."""
    path = RULES_DIR / f"{language}.toml"
    phase = tomllib.loads(path.read_text()).get("phase") if path.exists() else None
    if phase is not None and not (isinstance(phase.get("loop"), str) and isinstance(phase.get("timed"), str)):
        raise ValueError(f"layer rules: {path.name}'s [phase] needs `loop` and `timed`, each a regular expression")
    return phase


def _filled(text: str, lib: str, driver: str) -> re.Pattern[str]:
    return re.compile(text.replace("{lib}", re.escape(lib)).replace("{driver}", re.escape(driver)))


def _compiled(r: dict, lib: str, driver: str) -> Rule:
    def pattern(key: str) -> re.Pattern[str] | None:
        text = r.get(key)
        return None if text is None else _filled(text, lib, driver)
    return Rule(r["layer"], pattern("module"), pattern("symbol"), bool(r.get("defer")), bool(r.get("anywhere")))
