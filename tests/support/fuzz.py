"""Property-based fuzzing support (Hypothesis) for the tests of the lab's file loaders and of the
-p / -o parsers: a small TOML writer, and strategies that build TOML-ish documents from the real
schemas' keys (nearly valid files reach deep into validation; arbitrary values anywhere test that
nothing but a LabInputError naming the file comes out).

Every fuzz test uses FUZZ (bounded examples, a per-example deadline, no example database in the
checkout); the whole fuzz set runs in well under a minute on two cores.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from pathlib import Path
from typing import Any, Callable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from clientlab.errors import LabInputError, shown


def fuzz_settings(examples: int) -> settings:
    """Bounded: `examples` cases (they take milliseconds; the deadline catches a hang, not a slow
    moment of a shared machine, which took one past a second). The same cases on every run, so
    that the test suite passes or fails the same way each time; CLIENTLAB_FUZZ=random draws new
    ones (to look for new faults: ./test.sh -k fuzz)."""
    return settings(max_examples=examples, deadline=dt.timedelta(seconds=30), database=None,
                    derandomize=os.environ.get("CLIENTLAB_FUZZ") != "random",
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# -- writing TOML -----------------------------------------------------------------------------

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_string(text: str) -> str:
    out = []
    for c in text:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_string(key)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".e") else text + ".0"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def toml_document(doc: dict) -> str:
    """A top-level table: one `key = value` line each (tables and arrays of tables inline)."""
    return "".join(f"{toml_key(k)} = {toml_value(v)}\n" for k, v in doc.items())


# -- strategies -------------------------------------------------------------------------------

# text with what breaks parsers and paths: controls, separators, escapes, placeholders, non-ASCII
NASTY = ["", " ", "/", "//", "\\", "%", "%2F", "%5c", "?", "#", "&", "=", "..", ".", "{", "}", "{count}",
         "{size:bytes}", "{index}", "{x:path}", "{hops}", "[/]", "[bold]", "\x00", "\x1b[2J", "\r\n", "\t",
         "\u202e", "é", "💥", "http://203.0.113.9/", "//example.com", "1e400", "nan", "-1", "0", "9" * 30]
texts = st.one_of(st.text(max_size=40), st.sampled_from(NASTY),
                  st.lists(st.sampled_from(NASTY), max_size=5).map("".join))
numbers = st.one_of(st.integers(min_value=-10, max_value=10_000), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, 1, -1, 2**63 - 1, 2**63, 10**30]))
scalars = st.one_of(st.booleans(), numbers, texts, st.datetimes(), st.dates())


_ANYTHING: dict[tuple[str, ...], st.SearchStrategy] = {}


def anything(keys: list[str] | None = None) -> st.SearchStrategy:
    """Nested dicts and lists of scalars, with keys from the schema and others (small: the
    loaders' answers do not depend on size, and generating large values costs the time budget)."""
    names = tuple(keys or ["x", "y", "z"])
    if names not in _ANYTHING:
        key = st.one_of(st.sampled_from(names), st.text(max_size=6))
        _ANYTHING[names] = st.recursive(
            scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(key, inner, max_size=3),
            max_leaves=6)
    return _ANYTHING[names]


def maybe(plausible: st.SearchStrategy, keys: list[str] | None = None) -> st.SearchStrategy:
    """Mostly a plausible value for a field, sometimes anything at all."""
    wild = anything(keys)
    return st.integers(0, 9).flatmap(lambda roll: wild if roll == 0 else plausible)


def document(fields: dict[str, st.SearchStrategy], keys: list[str],
             required: dict[str, st.SearchStrategy] | None = None) -> st.SearchStrategy:
    """A table with the `required` fields and some of `fields` (each plausible or not), sometimes
    an unknown field too."""
    return st.fixed_dictionaries(required or {}, optional={**fields, "extra_field": anything(keys)})


words = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=20)


def leaf_paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every position in a parsed document: (key, key, index, ...) tuples."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += leaf_paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += leaf_paths(v, (*prefix, i))
    return out


def mutated(base: dict, values: dict[str, st.SearchStrategy], keys: list[str]) -> st.SearchStrategy:
    """`base` (a parsed, valid file) with one to three positions given another value: plausible
    for that field name (from `values`) or anything, or removed, or an unknown field added."""
    import copy

    positions = leaf_paths(base)

    @st.composite
    def build(draw: Callable) -> dict:
        doc = copy.deepcopy(base)
        for _ in range(draw(st.integers(1, 3))):
            where = draw(st.sampled_from(positions))
            parent = doc
            try:
                for step in where[:-1]:
                    parent = parent[step]
                last = where[-1]
                if not isinstance(parent, dict if isinstance(last, str) else list):
                    continue  # an earlier change replaced this position's parent with another kind
                action = draw(st.integers(0, 9))
                if action == 0 and isinstance(parent, dict):
                    parent.pop(last, None)
                elif action == 1 and isinstance(parent, dict):
                    parent[draw(st.sampled_from(keys))] = draw(anything(keys))
                else:
                    name = last if isinstance(last, str) else (where[-2] if len(where) > 1 else "")
                    parent[last] = draw(maybe(values.get(name, anything(keys)), keys))
            except (KeyError, IndexError, TypeError):
                continue  # an earlier change removed or replaced this position
        return doc

    return build()


# -- the property -----------------------------------------------------------------------------

def loads_or_explains(load: Callable[[Path], Any], path: Path, data: bytes) -> Any:
    """Write `data` to `path` and load it: the loader returns its object, or raises LabInputError
    whose every line names the file. Anything else (a traceback) fails the test. Returns the
    object or None."""
    path.write_bytes(data)
    try:
        return load(path)
    except LabInputError as exc:
        message = str(exc)
        assert message, "an error without a message"
        for line in message.splitlines():
            assert line.startswith(shown(path)), f"a line of the error does not name the file: {line!r}"
        return None


def scratch_file(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if path.is_dir():
        os.rmdir(path)
    return path
