"""The lab's own error types and the wording of input errors."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError


class LabError(Exception):
    """The lab itself cannot go on (a broken lab makes the run exit non-zero)."""


class LabInputError(LabError):
    """Bad input from the user: a scenario file, a manifest, an option. The message names it."""


def describe_validation_error(path: Path, exc: ValidationError) -> str:
    """One line per problem, each naming the file and the field."""
    lines = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown field (check the spelling against the documented fields)"
        lines.append(f"{path}: field '{field}': {message}")
    return "\n".join(lines)


def read_named_toml(path: Path, kind: str) -> dict:
    """A lab data file (scenario, experiment, network profile): its TOML, with `name` set from the
    file name (a different `name` in the file is an error naming both)."""
    import tomllib

    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LabInputError(f"{path}: cannot read {kind}: {exc}") from exc
    if raw.get("name") not in (None, path.stem):
        raise LabInputError(f"{path}: field 'name': '{raw.get('name')}' must match the file name '{path.stem}'")
    raw.setdefault("name", path.stem)
    return raw
