"""The machine a run happened on, recorded with every run."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _os_name() -> str:
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def _tool_version(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else None


def describe() -> dict:
    """CPU model, cores, memory, kernel, OS and the lab's own runtimes."""
    return {
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "kernel": platform.release(),
        "os": _os_name(),
        "python": sys.version.split()[0],
        "go": _tool_version(["go", "version"]),
        "hostname": platform.node(),
    }
