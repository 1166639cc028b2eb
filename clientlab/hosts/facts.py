"""What a host says about itself, for `clientlab hosts check`: run on the host, answers in JSON.

It runs as `python -m clientlab.hosts.facts` from the host's checkout, or, where clientlab is not
there, as this file's text piped over stdin to the host's python3. So it stays one file of the
standard library only, and runs on Python 3.8 and later.

The conversation on stdin/stdout, one JSON object a line (FACTS_PROTOCOL):
  → {"protocol": 1, "hello": "clientlab-facts", "source": ...}
  ← an empty line, for each clock reading the caller wants; → {"t": <the host's time.time()>}
  ← "done"; → {"protocol": 1, "facts": {...}} after the quiet sample, then it exits.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time

FACTS_PROTOCOL = 1
BUSY_SHARE = 0.05              # a process above 5 % of one core during the sample is busy
MAX_HASHED_BYTES = 4 << 20     # an untracked file past this is hashed by its size, not read


def _first_line(path: str, prefix: str) -> str | None:
    """The value of the first line that starts with `prefix` ("model name\t: X", "NAME=\"X\"")."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    rest = line[len(prefix):].strip()
                    return rest[1:].strip().strip('"') if rest[:1] in (":", "=") else rest.strip('"')
    except OSError:
        pass
    return None


def _go_version() -> str | None:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if go is None:
        return None
    try:
        done = subprocess.run([go, "version"], check=False, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else None


def _nics() -> dict:
    """Each interface but loopback: its speed in Mbit/s where the driver knows it, and whether it
    is virtual (veth, bridge) rather than a device."""
    nics = {}
    try:
        names = sorted(os.listdir("/sys/class/net"))
    except OSError:
        return nics
    for name in names:
        if name == "lo":
            continue
        try:
            with open(f"/sys/class/net/{name}/speed") as f:
                speed = int(f.read().strip())
        except (OSError, ValueError):  # down, or a driver that has no speed: EINVAL
            speed = -1
        virtual = os.path.realpath(f"/sys/class/net/{name}").startswith("/sys/devices/virtual/")
        nics[name] = {"speed_mbit": speed if speed > 0 else None, "virtual": virtual}
    return nics


def fingerprint() -> dict:
    """The keys of clientlab.measuring.machine.describe() (a run's `machine`), with the same meaning, plus
    the network interfaces: two hosts compare like with like."""
    memory_kib = _first_line("/proc/meminfo", "MemTotal")
    return {
        "cpu_model": _first_line("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "memory_gib": round(int(memory_kib.split()[0]) / 1024 / 1024, 1) if memory_kib else None,
        "kernel": platform.release(),
        "os": _first_line("/etc/os-release", "PRETTY_NAME") or platform.system(),
        "python": sys.version.split()[0],
        "go": _go_version(),
        "hostname": platform.node(),
        "nics": _nics(),
    }


def _git(lab_dir: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", lab_dir, *args], check=False, capture_output=True, timeout=30)


def _untracked_digest(lab_dir: str, digest: hashlib._Hash) -> None:
    listed = _git(lab_dir, "ls-files", "--others", "--exclude-standard", "-z").stdout
    for name in sorted(n for n in listed.split(b"\0") if n):
        path = os.path.join(lab_dir, os.fsdecode(name))
        digest.update(name + b"\0")
        try:
            size = os.path.getsize(path)
            if size > MAX_HASHED_BYTES:
                digest.update(str(size).encode())
                continue
            with open(path, "rb") as f:
                digest.update(f.read())
        except OSError:
            digest.update(b"?")


def version(lab_dir: str) -> dict:
    """The checkout's commit, whether its tree differs from the commit, and a digest of those
    changes (tracked and untracked files), so that two dirty trees can be told the same or not."""
    if not os.path.isdir(lab_dir):
        return {"commit": None, "dirty": None, "changes": None, "problem": f"no folder {lab_dir}"}
    if shutil.which("git") is None:
        return {"commit": None, "dirty": None, "changes": None, "problem": "git is not installed"}
    try:
        head = _git(lab_dir, "rev-parse", "HEAD")
        if head.returncode != 0:
            problem = head.stderr.decode(errors="replace").strip().splitlines() or ["not a git checkout"]
            return {"commit": None, "dirty": None, "changes": None, "problem": problem[-1]}
        status = _git(lab_dir, "status", "--porcelain", "-z").stdout
        changes = None
        if status:
            digest = hashlib.sha256(_git(lab_dir, "diff", "HEAD", "--binary").stdout)
            _untracked_digest(lab_dir, digest)
            changes = digest.hexdigest()[:16]
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"commit": None, "dirty": None, "changes": None, "problem": f"git: {exc}"}
    return {"commit": head.stdout.decode().strip(), "dirty": bool(status), "changes": changes, "problem": None}


def build_stamps(lab_home: str) -> dict:
    """Driver id → its build stamp (the digest of its build inputs; clientlab/drivers/build.py)."""
    folder = os.path.join(lab_home, "build")
    stamps = {}
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".stamp"))
    except OSError:
        return stamps
    for name in names:
        try:
            with open(os.path.join(folder, name)) as f:
                stamps[name[: -len(".stamp")]] = f.read().strip()
        except OSError:
            continue
    return stamps


def _cpu_ticks() -> dict:
    ticks = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(") ", 1)[1].split()
            ticks[int(pid)] = int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, IndexError, ValueError):
            continue
    return ticks


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def quiet(sample_s: float) -> dict:
    """The load averages, and the processes that used more than BUSY_SHARE of a core over a
    sample of `sample_s` seconds (this one left out), busiest first."""
    load = list(os.getloadavg())
    busy = []
    if sample_s > 0:
        before, start = _cpu_ticks(), time.monotonic()
        time.sleep(sample_s)
        after, elapsed = _cpu_ticks(), time.monotonic() - start
        hz = os.sysconf("SC_CLK_TCK")
        for pid, ticks in after.items():
            share = (ticks - before.get(pid, ticks)) / hz / elapsed
            if share > BUSY_SHARE and pid != os.getpid():
                busy.append({"pid": pid, "name": _name(pid), "core_share": round(share, 3)})
    busy.sort(key=lambda p: -p["core_share"])
    return {"load": [round(x, 2) for x in load], "busy": busy, "sample_s": sample_s}


def gather(lab_dir: str, lab_home: str, sample_s: float) -> dict:
    # the checkout first: read as close as can be to when the caller read its own
    checkout = {"lab_dir": lab_dir, "version": version(lab_dir), "builds": build_stamps(lab_home)}
    return {**checkout, "quiet": quiet(sample_s), "fingerprint": fingerprint()}


def _say(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def converse(source: str, lab_dir: str, sample_s: float, note: str | None) -> None:
    """The host's side of the conversation in the module docstring."""
    _say({"protocol": FACTS_PROTOCOL, "hello": "clientlab-facts", "source": source, "note": note})
    for line in sys.stdin:
        if line.strip() == "done":
            break
        _say({"t": time.time()})
    lab_home = os.environ.get("CLIENTLAB_HOME") or os.path.join(lab_dir, ".lab")
    _say({"protocol": FACTS_PROTOCOL, "facts": gather(lab_dir, lab_home, sample_s)})


def main() -> None:
    parser = argparse.ArgumentParser(description="This host's facts for clientlab hosts check (JSON lines).")
    parser.add_argument("--lab-dir", required=True, help="Where clientlab is (or should be) checked out.")
    parser.add_argument("--sample-s", type=float, default=1.0, help="How long to watch for busy processes.")
    parser.add_argument("--source", default="module", help="How this was started: module or script.")
    parser.add_argument("--note", help="Why it was started that way.")
    args = parser.parse_args()
    converse(args.source, args.lab_dir, args.sample_s, args.note)


if __name__ == "__main__":
    main()
