"""The profilers, installed on first use (not by set-up): perf from Debian's packages, py-spy
into a tool venv of the lab's own, at a pinned version. Each install says so on stderr first,
and a failed one raises ProfilerMissing naming what to run by hand."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from clientlab import paths
from clientlab.errors import LabError

PY_SPY_VERSION = "0.4.3"   # pinned: its raw output and its flags are what pyspy.py reads
PERF_PACKAGE = "linux-perf"


class ProfilerMissing(LabError):
    """A profiler the lab needs is not installed and could not be installed."""


def _say(text: str) -> None:
    print(f"clientlab: {text}", file=sys.stderr, flush=True)


def _works(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def perf() -> str:
    """The perf binary, installed from Debian's `linux-perf` when missing."""
    found = shutil.which("perf")
    if found and _works([found, "--version"]):
        return found
    _say(f"installing {PERF_PACKAGE} for profiles (first use): apt-get install -y {PERF_PACKAGE}")
    done = subprocess.run(["apt-get", "install", "-y", "-q", PERF_PACKAGE], capture_output=True, text=True)
    found = shutil.which("perf")
    if done.returncode != 0 or not found or not _works([found, "--version"]):
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ProfilerMissing(f"perf is needed for profiles and could not be installed "
                              f"(apt-get install -y {PERF_PACKAGE}: {' / '.join(tail) or 'no output'}); "
                              f"install it by hand and run again")
    return found


def tools_dir() -> Path:
    return paths.lab_home() / "tools"


def py_spy() -> str:
    """py-spy at PY_SPY_VERSION in the lab's tool venv (<lab home>/tools/py-spy)."""
    venv = tools_dir() / f"py-spy-{PY_SPY_VERSION}"
    binary = venv / "bin" / "py-spy"
    if binary.exists() and _works([str(binary), "--version"]):
        return str(binary)
    _say(f"installing py-spy {PY_SPY_VERSION} for profiles (first use) into {venv}")
    steps = [[sys.executable, "-m", "venv", "--clear", str(venv)],
             [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", f"py-spy=={PY_SPY_VERSION}"]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ProfilerMissing(f"py-spy {PY_SPY_VERSION} is needed for Python profiles and could not be "
                                  f"installed ({' '.join(step[:3])} …: {' / '.join(tail) or 'no output'})")
    if not _works([str(binary), "--version"]):
        raise ProfilerMissing(f"py-spy {PY_SPY_VERSION} was installed into {venv} but does not run")
    return str(binary)
