"""The bench server's binary, built again when its sources changed since set-up built it (a pull
or an edit of server/), so that a run never measures against an older server than the checkout's.

The stamp is set-up's own: SHA-256 of server/'s .go, go.mod and go.sum files, concatenated in the
byte order of their paths (setup.sh writes the same into <lab home>/bin/.server-stamp)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from clientlab import paths
from clientlab.errors import LabError

SOURCES = paths.ROOT / "server"


def source_stamp() -> str:
    digest = hashlib.sha256()
    files = sorted(f.relative_to(paths.ROOT).as_posix() for f in SOURCES.rglob("*")
                   if f.is_file() and (f.suffix == ".go" or f.name in ("go.mod", "go.sum")))
    for name in files:
        digest.update((paths.ROOT / name).read_bytes())
    return digest.hexdigest()


def current() -> Path:
    """The lab's server binary, built first if it is missing or older than server/'s sources."""
    binary = paths.server_binary()
    stamp_file = binary.parent / ".server-stamp"
    stamp = source_stamp()
    if binary.exists() and stamp_file.exists() and stamp_file.read_text().strip() == stamp:
        return binary
    go = shutil.which("go")
    if go is None:
        raise LabError(f"bench server not built: {binary} is missing or older than server/, and "
                       "there is no go to build it (run ./setup.sh)")
    why = "missing" if not binary.exists() else "older than server/'s sources"
    print(f"clientlab: building the bench server ({binary.name} is {why}) …", file=sys.stderr, flush=True)
    started = time.monotonic()
    binary.parent.mkdir(parents=True, exist_ok=True)
    # built beside it and renamed into place: a server running from the old file keeps it, and two
    # labs building at once each put a whole binary there
    fresh = binary.with_name(f".{binary.name}.{os.getpid()}")
    built = subprocess.run([go, "build", "-o", str(fresh), "."], cwd=SOURCES, capture_output=True, text=True)
    if built.returncode != 0:
        fresh.unlink(missing_ok=True)
        raise LabError(f"the bench server does not build (go build in {SOURCES}):\n"
                       f"{(built.stderr or built.stdout).strip()[-2000:]}")
    os.replace(fresh, binary)
    stamp_file.write_text(stamp + "\n")
    print(f"clientlab: bench server built in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return binary
