"""The lab's data files (driver manifests, scenarios, experiments, network profiles, behaviour
cases, hosts files): the one reader of their TOML, bounded and strict, and the one scan of a
folder of them."""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from clientlab.errors import LabInputError, quote, shown

# What a lab data file (scenario, experiment, network profile, driver manifest) may be. They are a few
# hundred bytes each: anything far past these limits is not one, and is refused before it costs much.
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 16                      # tables and arrays inside each other (the formats need 5)
MAX_INT = (1 << 63) - 1             # what SQLite, JSON readers and the Go server all take
# control characters (C0 but tab, newline, carriage return; DEL; C1): terminal escapes, NULs
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_CONTROL_IN_KEY = re.compile(r"[\x00-\x1f\x7f-\x9f]")


T = TypeVar("T")


class Found(NamedTuple, Generic[T]):
    """What a loader's discover() found: what loads, and one line for each file or folder that
    does not and why (a broken file is reported, not in the way of the others)."""

    found: list[T]
    problems: list[str]


def _read_bytes(path: Path, kind: str) -> bytes:
    """The file's bytes, or a LabInputError saying why it cannot be one of the lab's files.

    Opened without blocking and checked on the open descriptor: a pipe, a device or a folder
    that has a data file's name is refused without being read (a FIFO would block, /dev/zero
    would never end)."""
    where = shown(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise LabInputError(f"{where}: cannot read {kind}: no such file (a broken link?)") from None
    except OSError as exc:
        raise LabInputError(f"{where}: cannot read {kind}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise LabInputError(f"{where}: cannot read {kind}: it is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise LabInputError(f"{where}: cannot read {kind}: not a regular file (a pipe, socket or device)")
        if info.st_size > MAX_FILE_BYTES:
            raise LabInputError(f"{where}: cannot read {kind}: {info.st_size} bytes; "
                                f"a {kind} file is at most {MAX_FILE_BYTES // 1024} KiB")
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise LabInputError(f"{where}: cannot read {kind}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        raise LabInputError(f"{where}: cannot read {kind}: more than {MAX_FILE_BYTES // 1024} KiB")
    return data


def _position(text: bytes, offset: int) -> str:
    line = text.count(b"\n", 0, offset) + 1
    column = offset - (text.rfind(b"\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


def value_problem(data: Any) -> tuple[str, str] | None:
    """(field, problem) for the first value no lab file can hold: nested past MAX_DEPTH, nan or inf,
    an integer past MAX_INT, a control character in a string or a key. Walks without recursion."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, field, depth = stack.pop()
        if depth > MAX_DEPTH:
            return field, f"nested more than {MAX_DEPTH} tables or arrays deep"
        if isinstance(value, dict):
            for key, item in value.items():
                name = f"{field}.{key}" if field else str(key)
                if _CONTROL_IN_KEY.search(key):
                    return name, "a key with a control character"
                stack.append((item, name, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{field}.{i}" if field else str(i), depth + 1) for i, item in enumerate(value))
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if abs(value) > MAX_INT:
                return field, f"the number {quote(value, 40)} is too large (at most {MAX_INT})"
        elif isinstance(value, float):
            if not math.isfinite(value):
                return field, f"{value} is not a number the lab takes (use a finite number)"
        elif isinstance(value, str):
            found = _CONTROL.search(value)
            if found:
                return field, f"control character {found.group()!r} in {quote(value)}"
    return None


def read_toml(path: Path, kind: str) -> dict:
    """A lab data file's TOML as a dict, or a LabInputError naming the file and the problem: not
    a readable regular file, too large, empty, not UTF-8, not TOML, nested too deeply, a number
    that is too large, nan or inf, a control character."""
    import tomllib

    where = shown(path)
    data = _read_bytes(path, kind)
    if not data.strip():
        raise LabInputError(f"{where}: cannot read {kind}: the file is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LabInputError(
            f"{where}: cannot read {kind}: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
            f"{_position(data, exc.start)}); save it as UTF-8") from None
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LabInputError(f"{where}: cannot read {kind}: not valid TOML: {exc}") from None
    except RecursionError:
        raise LabInputError(f"{where}: cannot read {kind}: nested more than {MAX_DEPTH} "
                            "tables or arrays deep") from None
    except ValueError as exc:  # Python's limit on the digits of an integer
        problem = "a number with thousands of digits" if "digits" in str(exc) else str(exc)
        raise LabInputError(f"{where}: cannot read {kind}: {problem}") from None
    problem = value_problem(raw)
    if problem:
        raise LabInputError(f"{where}: field '{shown(problem[0])}': {problem[1]}")
    return raw


def read_named_toml(path: Path, kind: str) -> dict:
    """A lab data file (scenario, experiment, network profile): its TOML, with `name` set from the
    file name (a different `name` in the file is an error naming both)."""
    raw = read_toml(path, kind)
    if raw.get("name") not in (None, path.stem):
        raise LabInputError(f"{shown(path)}: field 'name': {quote(raw.get('name'))} must match the file name "
                            f"{quote(path.stem)}")
    raw.setdefault("name", path.stem)
    return raw


def scan_folder(folder, load):  # noqa: ANN001, ANN201 - (Path, Path -> T) -> (dict[str, T], dict[str, str])
    """Every `*.toml` in `folder` that `load` accepts, by stem, and for each it refuses, why:
    a broken file is reported, not in the way of the others."""
    good, broken = {}, {}
    for p in sorted(folder.glob("*.toml")):
        try:
            good[p.stem] = load(p)
        except LabInputError as exc:
            broken[p.stem] = str(exc)
    return good, broken
