"""The lab's own error types, and the wording of their messages about the user's input."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError


class LabError(Exception):
    """The lab itself cannot go on (a broken lab makes the run exit non-zero)."""


class LabInputError(LabError):
    """Bad input from the user: a scenario file, a manifest, an option. The message names it."""


def _escaped(text: str) -> str:
    """`text` with what cannot be printed written as escapes: control characters, and the bytes
    of a file name that is not UTF-8 (os.fsdecode's surrogates) as \\xNN."""
    if text.isprintable():
        return text
    out = []
    for c in text:
        if 0xDC80 <= ord(c) <= 0xDCFF:
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        elif not c.isprintable():
            out.append(c.encode("unicode_escape").decode("ascii"))
        else:
            out.append(c)
    return "".join(out)


def shown(path: Path | str) -> str:
    """A path (or field name) as it can be printed anywhere."""
    return _escaped(str(path))


def quote(value: Any, limit: int = 60) -> str:
    """A value from the user's input as an error message shows it: quoted, escapes for what
    cannot be printed, cut after `limit` characters."""
    if isinstance(value, int) and value.bit_length() > 128:  # repr() refuses past 4300 digits
        text = f"{'-' if value < 0 else ''}2^{value.bit_length() - 1}…"
    else:
        text = value if isinstance(value, str) else repr(value)
    cut = len(text) > limit
    return f"'{_escaped(text[:limit])}'" + ("…" if cut else "")


def describe_validation_error(path: Path, exc: ValidationError) -> str:
    """One line per problem, each naming the file and the field."""
    lines = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown field (check the spelling against the documented fields)"
        lines.append(f"{shown(path)}: field '{shown(field)}': {message}")
    return "\n".join(lines)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """' (did you mean python-requests?)' for a name close to a known one, else ''."""
    close = difflib.get_close_matches(name, list(known), n=2, cutoff=0.8)
    return f" (did you mean {' or '.join(close)}?)" if close else ""
