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
