"""Where the lab keeps things: its checkout, its data directory, its binaries."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lab_home() -> Path:
    """The lab's data directory (results database, certificates, build stamps)."""
    return Path(os.environ.get("CLIENTLAB_HOME", ROOT / ".lab"))


def results_db() -> Path:
    return lab_home() / "results.sqlite"


def server_binary() -> Path:
    return lab_home() / "bin" / "clientlab-server"


def lab_binary(name: str) -> Path:
    """A binary that set-up builds into the lab's bin/ (clientlab-dns, toxiproxy-server)."""
    return lab_home() / "bin" / name


def tls_dir() -> Path:
    return lab_home() / "tls"


def drivers_dir() -> Path:
    return ROOT / "drivers"


def instruments_dir() -> Path:
    """The lab's instruments: drivers that do a known amount of work (clientlab selfbench)."""
    return ROOT / "clientlab" / "selfcheck" / "instruments"


def scenarios_dir() -> Path:
    return ROOT / "scenarios"


def scratch_dir() -> Path:
    """Per-run scratch files (upload bodies, sink files); removed after use."""
    path = lab_home() / "scratch"
    path.mkdir(parents=True, exist_ok=True)
    return path
