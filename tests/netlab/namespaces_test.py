"""The network lab's claim on the machine: who holds it, said readably while a second lab waits."""

from __future__ import annotations

import subprocess
import sys

from clientlab import paths
from clientlab.measuring.runlock import RunLock
from tests.support.cli import lines_while_waiting


def test_the_network_labs_waiting_message_wraps_at_80_columns(tmp_path):
    lock = tmp_path / "netlab.lock"
    holder = RunLock("clientlab run -d c-libcurl,go-net-http,python-requests -s get-small,get-json-335k --net lossy",
                     lock, what="the network lab")
    holder.acquire()
    # the machine's own network-lab lock is never moved by an environment variable: this waiter's is
    waiter = subprocess.Popen([sys.executable, "-c", "import pathlib, sys; from clientlab.netlab import namespaces; "
                               f"namespaces.lock_path = lambda *a, **k: pathlib.Path({str(lock)!r}); namespaces.claim()"],
                              stderr=subprocess.PIPE, text=True, env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"},
                              cwd=paths.ROOT)
    try:
        said = lines_while_waiting(waiter)
    finally:
        holder.release()
    assert " ".join(" ".join(said).split()).startswith("waiting for the network lab:"), said
    assert len(said) > 1 and max(map(len, said)) <= 80, said


def test_net_clean_says_who_holds_the_network_lab_in_lines_of_80_columns(tmp_path):
    lock = tmp_path / "netlab.lock"
    holder = RunLock("clientlab run -d c-libcurl,go-net-http,python-requests -s get-small,get-json-335k --net lossy",
                     lock, what="the network lab")
    holder.acquire()
    try:
        proc = subprocess.run([sys.executable, "-c", "import pathlib, sys; from clientlab.netlab import namespaces; "
                               f"namespaces.lock_path = lambda *a, **k: pathlib.Path({str(lock)!r}); "
                               "from clientlab.cli import entry; sys.argv = ['clientlab', 'net', 'clean']; entry()"],
                              capture_output=True, text=True, env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"},
                              cwd=paths.ROOT, timeout=60)
    finally:
        holder.release()
    said = proc.stderr.splitlines()
    assert proc.returncode == 75, proc.stderr
    joined = " ".join(" ".join(said).split())
    assert joined.startswith("busy:") and joined.endswith("nothing removed"), said
    assert len(said) > 1 and max(map(len, said)) <= 80, said
