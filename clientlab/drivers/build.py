"""Building drivers, cached: a driver is rebuilt only when its build inputs change."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from clientlab import paths
from clientlab.drivers.manifest import Driver
from clientlab.errors import LabInputError

_SKIP_DIRS = {".venv", "build", "node_modules", "target", "__pycache__", "vendor"}


def _skipped(part: str) -> bool:
    """Build outputs, a runtime variant's too (".venv-python3.12", "build-go1.24")."""
    return part.split("-", 1)[0] in _SKIP_DIRS or part in _SKIP_DIRS


def _inputs(driver: Driver) -> list[Path]:
    folder = driver.folder
    patterns = driver.manifest.build_inputs
    if patterns:
        files = {p for pattern in patterns for p in folder.glob(pattern) if p.is_file()}
    else:
        files = {
            p for p in folder.rglob("*")
            if p.is_file() and not any(_skipped(part) for part in p.relative_to(folder).parts[:-1])
        }
    return sorted(files)


def fingerprint(driver: Driver) -> str:
    """Digest of the build command and every build input (names and contents)."""
    digest = hashlib.sha256(repr(driver.manifest.build).encode())
    if driver.runtime:
        digest.update(f"{driver.runtime.kind} {driver.runtime.version}".encode())
    for path in _inputs(driver):
        digest.update(str(path.relative_to(driver.folder)).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _stamp(driver: Driver) -> Path:
    return paths.lab_home() / "build" / f"{driver.id}.stamp"


Digest = Callable[[Driver], str]


def is_built(driver: Driver, digest: Digest = fingerprint) -> bool:
    """The stamp matches the build inputs, and the program the build made is still there."""
    stamp = _stamp(driver)
    if not stamp.exists() or stamp.read_text().strip() != digest(driver):
        return False
    program = driver.argv[0]
    return "/" not in program or Path(program).exists()


def missing(driver: Driver, digest: Digest = fingerprint) -> str | None:
    """Why this driver cannot run now, or None when it is installed (its runtime, its tools, its
    build, its program). `digest` reads the build inputs (fingerprint): the costly part, every
    input file hashed."""
    reason = driver.runtime.missing() if driver.runtime else None
    if reason:
        return reason
    for tool in driver.manifest.requires:
        if shutil.which(tool) is None:
            return f"needs '{tool}' on PATH (set-up installs it: ./setup.sh)"
    if driver.manifest.build and not is_built(driver, digest):
        if driver.variant:
            return (f"not built on {driver.variant.kind} {driver.variant.version}: clientlab build -d "
                    f"{driver.manifest.id} --runtimes {driver.variant.kind}={driver.variant.line} says why")
        return "not built yet: run ./setup.sh (or clientlab build)"
    program = driver.argv[0]
    if "/" in program:
        if not Path(program).exists():
            return f"program {program} does not exist"
    elif shutil.which(program) is None:
        return f"program '{program}' is not on PATH"
    return None


class Readiness:
    """Whether drivers can run, their build inputs read once a driver for a run (or a command):
    `digest` hashes a driver's inputs the first time it is asked and keeps the digest, the rest
    of the verdict (runtime, tools, program) is a few stat calls.

    Once a run is enough: the run measures each driver as it found it. A source edited during the
    run does not change the program that was built (only a build does), and that program is what
    the driver's processes kept warm or forked go on running, so a later cell must not turn
    not-installed half way for an edit. A build the run makes itself (on first use) is read again
    (`forget`). `read` is the seam that hashes the inputs (the tests count its calls)."""

    def __init__(self, read: Digest = fingerprint):
        self.read = read
        self._digests: dict[tuple[str, Path], str] = {}

    def digest(self, driver: Driver) -> str:
        key = (driver.id, driver.folder)
        if key not in self._digests:
            self._digests[key] = self.read(driver)
        return self._digests[key]

    def missing(self, driver: Driver) -> str | None:
        return missing(driver, self.digest)

    def is_built(self, driver: Driver) -> bool:
        return is_built(driver, self.digest)

    def forget(self, driver: Driver) -> None:
        """Read the driver's inputs again when next asked: it was built since."""
        self._digests.pop((driver.id, driver.folder), None)


def build(driver: Driver, force: bool = False) -> tuple[bool, str]:
    """Build one driver. Returns (ok, what happened); output of a failed build is in the message."""
    if not driver.manifest.build:
        return True, "nothing to build"
    if not force and is_built(driver):
        return True, "up to date"
    argv = driver.expand(driver.manifest.build)
    try:
        installed = driver.runtime.install() if driver.runtime else None
    except LabInputError as exc:
        return False, str(exc)
    try:
        proc = subprocess.run(argv, cwd=driver.folder, capture_output=True, text=True, timeout=1800,
                              env=driver.env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"build command {argv} failed: {exc}"
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        return False, f"build exited {proc.returncode}:\n{tail}"
    stamp = _stamp(driver)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(fingerprint(driver) + "\n")
    return True, f"built (on {driver.runtime.kind} {driver.runtime.version}, {installed})" if installed else "built"


def on_first_use(drivers: Iterable[Driver], say: Callable[[str], object], readiness: Readiness | None = None) -> None:
    """Build the chosen drivers that are not built yet: set-up builds the default run's drivers
    only, and the others wait for the first command that needs them. Each gets a line before its
    build and its time after; a failed build leaves the driver not installed, saying why (its
    cells say it too). A driver whose tools are missing is left to say so. `readiness`: the
    command's, which reads a driver built here again."""
    readiness = readiness or Readiness()
    for driver in drivers:
        if not driver.manifest.build or any(shutil.which(t) is None for t in driver.manifest.requires):
            continue
        if readiness.is_built(driver):
            continue
        say(f"building {driver.id} on first use …")
        started = time.monotonic()
        ok, what = build(driver)
        readiness.forget(driver)
        took = time.monotonic() - started
        say(f"{driver.id}: {what.splitlines()[0]} in {took:.0f} s" if ok else f"{driver.id}: build failed: {what}")
