"""The profilers, installed on first use (not by set-up): perf, php-excimer and NYTProf from
Debian's packages, py-spy into a tool venv of the lab's own and rbspy with cargo, both in the
machine's tools cache (tools_dir()), each at a pinned version. Each install says so on stderr first (and how long it
took after), and a failed one raises ProfilerMissing naming what to run by hand."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from clientlab.errors import LabError

PY_SPY_VERSION = "0.4.3"   # pinned: its raw output and its flags are what pyspy.py reads
PERF_PACKAGE = "linux-perf"
RBSPY_VERSION = "0.41.0"   # pinned: its collapsed output is what folded.parse_rbspy reads
EXCIMER_PACKAGE = "php-excimer"          # PHP's sampling profiler (Debian 12: 1.0.4)
NYTPROF_PACKAGE = "libdevel-nytprof-perl"  # Perl's Devel::NYTProf and nytprofcalls (Debian 12: 6.12)


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
    """The machine's cache of pinned profilers, shared by every checkout and lab home on it: each
    tool sits in a folder named for its version, and rbspy takes minutes of cargo to build.
    $CLIENTLAB_TOOLS, else $XDG_CACHE_HOME/clientlab/tools, else ~/.cache/clientlab/tools."""
    if os.environ.get("CLIENTLAB_TOOLS"):
        return Path(os.environ["CLIENTLAB_TOOLS"])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "clientlab" / "tools"


def py_spy() -> str:
    """py-spy at PY_SPY_VERSION in a tool venv of its own in the machine's tools cache."""
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


def _apt(package: str, check: list[str], what: str) -> None:
    """Debian's `package` installed when `check` does not run; ProfilerMissing when it cannot be."""
    if _works(check):
        return
    _say(f"installing {package} for {what} (first use): apt-get install -y {package}")
    started = time.monotonic()
    done = subprocess.run(["apt-get", "install", "-y", "-q", package], capture_output=True, text=True)
    if done.returncode != 0 or not _works(check):
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ProfilerMissing(f"{package} is needed for {what} and could not be installed "
                              f"(apt-get install -y {package}: {' / '.join(tail) or 'no output'}); "
                              f"install it by hand and run again")
    _say(f"installed {package} in {time.monotonic() - started:.0f} s")


def rbspy() -> str:
    """rbspy at RBSPY_VERSION, built by cargo into the machine's tools cache (tools_dir()/rbspy-V)."""
    root = tools_dir() / f"rbspy-{RBSPY_VERSION}"
    binary = root / "bin" / "rbspy"
    if binary.exists() and _works([str(binary), "--version"]):
        return str(binary)
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    step = [cargo, "install", "rbspy", "--version", RBSPY_VERSION, "--locked", "--root", str(root)]
    _say(f"installing rbspy {RBSPY_VERSION} for Ruby profiles (first use, a few minutes of compiling): {' '.join(step)}")
    started = time.monotonic()
    try:
        done = subprocess.run(step, capture_output=True, text=True)
    except OSError as exc:
        raise ProfilerMissing(f"rbspy {RBSPY_VERSION} is needed for Ruby profiles and cargo could not run ({exc}): "
                              f"install Rust's cargo, or run {' '.join(step)} by hand") from None
    if done.returncode != 0 or not _works([str(binary), "--version"]):
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ProfilerMissing(f"rbspy {RBSPY_VERSION} is needed for Ruby profiles and could not be installed "
                              f"({' '.join(step)}: {' / '.join(tail) or 'no output'})")
    _say(f"installed rbspy {RBSPY_VERSION} in {time.monotonic() - started:.0f} s")
    return str(binary)


def excimer() -> None:
    """PHP's excimer extension (Debian's php-excimer), switched off for every PHP process but the
    lab's profiling ones, which load it themselves (samplers.process_env): the timed processes
    keep the PHP they had."""
    probe = ["php", "-n", "-d", "extension=excimer", "-r", "exit(extension_loaded('excimer') ? 0 : 1);"]
    if _works(probe):
        return
    _apt(EXCIMER_PACKAGE, probe, "PHP profiles")
    if shutil.which("phpdismod"):
        subprocess.run(["phpdismod", "excimer"], capture_output=True)


def nytprof() -> str:
    """Perl's Devel::NYTProf (Debian's libdevel-nytprof-perl); its nytprofcalls, which folds a
    profile's call events into stacks."""
    _apt(NYTPROF_PACKAGE, ["perl", "-MDevel::NYTProf::Data", "-e", "1"], "Perl profiles")
    found = shutil.which("nytprofcalls")
    if not found:
        raise ProfilerMissing(f"nytprofcalls is missing although {NYTPROF_PACKAGE} is installed")
    return found


def jfr() -> str:
    """The JDK's jfr tool (its recordings printed as JSON) beside jcmd."""
    found = shutil.which("jfr")
    if not found or not shutil.which("jcmd"):
        raise ProfilerMissing("jcmd and jfr (the JDK's, openjdk-17-jdk-headless) are needed for Java profiles")
    return found
