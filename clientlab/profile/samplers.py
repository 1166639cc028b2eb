"""Sampling profilers attached to a driver's process tree for one trial's timed phase.

A sampler is started with the driver's process tree once the driver said `ready` (it is then
idle, waiting for `go`), sees the timed phase, and is stopped right after `done`; `folded()` then
gives its samples as folded stacks (folded.py). Each runs outside the driver's control group,
so the CPU the lab reads for the trial is the driver's alone; the profiler's cost to the driver
shows as the trial's wall time against the cell's timed trials (its overhead, kept with the
profile)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Protocol

from clientlab.errors import LabError
from clientlab.measuring.procfs import process_tree
from clientlab.profile import tools
from clientlab.profile.folded import Folded, parse_perf_script, parse_pyspy

READY_TIMEOUT_S = 20.0
ACK_TIMEOUT_S = 30.0   # perf answering on its control FIFO: seconds on a loaded host (5 s was missed)
PERF_HZ = 999        # cpu-clock samples a second of CPU (software timer: these VMs have no PMU)
PY_SPY_HZ = 250      # py-spy stops the process at each sample (--native): its cost grows with the rate


class ProfilerFailed(LabError):
    """A profiler did not start, or gave no profile: the cell keeps its figures, without layers."""


class Sampler(Protocol):
    name: str
    blind_spots: str

    def start(self, pids: list[int]) -> None: ...
    def stop(self) -> None: ...
    def folded(self) -> Folded: ...
    def close(self) -> None: ...


def _wait_for(path: Path, text: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise ProfilerFailed(f"{what} exited before sampling: {path.read_text(errors='replace').strip()[-300:]}")
        time.sleep(0.01)
    raise ProfilerFailed(f"{what} did not start sampling within {READY_TIMEOUT_S:.0f} s")


class Perf:
    """perf record -e cpu-clock with DWARF call graphs (frame pointers where asked), on the core the
    driver is pinned to (its tree's samples kept), or else attached to the tree's processes (all
    their threads, and threads they start); started disabled and switched on and off through its
    control FIFO, so that only the timed phase is sampled."""

    name = "perf"
    blind_spots = ("interpreted and JIT-compiled frames appear as the runtime's own functions or as "
                   "unnamed addresses; processes started and ended within the trial are not seen; DWARF "
                   "unwinding stops at 16 KB of stack (Go: frame pointers); stripped libraries "
                   "(libcurl) show as '?' in their module")

    def __init__(self, hz: int = PERF_HZ, call_graph: str = "dwarf,16384", jvm_map: bool = False):
        self.hz, self.call_graph, self.jvm_map = hz, call_graph, jvm_map
        self.pids: list[int] = []
        self.per_core = False
        self.dir = Path(tempfile.mkdtemp(prefix="clientlab-perf-"))
        self.proc: subprocess.Popen | None = None
        self._ctl: int | None = None
        self._ack: int | None = None
        self._folded: Folded | None = None

    def start(self, pids: list[int]) -> None:
        binary = tools.perf()
        self.pids = list(pids)
        ctl, ack = self.dir / "ctl", self.dir / "ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        err = self.dir / "stderr"
        core = _one_core(pids[0])
        # a driver pinned to one core: that core sampled whole and the tree's samples kept (perf
        # script --pid); events per task would be switched at each of the driver's context
        # switches, a cost in the driver's own CPU on every request
        target = ["-C", str(core)] if core is not None else ["-p", ",".join(str(p) for p in pids)]
        self.per_core = core is not None
        with open(err, "w") as stderr:
            self.proc = subprocess.Popen(
                [binary, "record", "--no-buildid-cache", "-e", "cpu-clock",
                 "-F", str(self.hz), "--call-graph", self.call_graph, "-D", "-1",
                 "--control", f"fifo:{ctl},{ack}", "-o", str(self.dir / "perf.data"), *target],
                stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr, start_new_session=True)
        _wait_for(err, "Events disabled", self.proc, "perf record")
        self._ctl = os.open(ctl, os.O_RDWR)
        self._ack = os.open(ack, os.O_RDWR)
        self._command("enable")

    def _command(self, what: str) -> None:
        assert self._ctl is not None and self._ack is not None
        os.write(self._ctl, f"{what}\n".encode())
        deadline = time.monotonic() + ACK_TIMEOUT_S
        got = b""
        os.set_blocking(self._ack, False)
        while b"ack" not in got and time.monotonic() < deadline:
            with contextlib.suppress(BlockingIOError):
                got += os.read(self._ack, 16)
            time.sleep(0.001)
        if b"ack" not in got:
            raise ProfilerFailed(f"perf record did not acknowledge '{what}'")

    def stop(self) -> None:
        if self.proc is None:
            return
        self._command("disable")
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise ProfilerFailed("perf record did not finish writing its data within 60 s") from None
        self._stopped = True
        if self.per_core:
            # the tree as it is now too: processes it started during the trial and still has
            self.pids = sorted(set(self.pids) | {p for root in self.pids[:1] for p in process_tree(root)})
        if self.jvm_map:
            _jvm_perf_maps(self.pids)

    def folded(self) -> Folded:
        """The samples as folded stacks (perf script, read once the trial is over)."""
        if self._folded is not None:
            return self._folded
        if not getattr(self, "_stopped", False):
            raise ProfilerFailed("perf gave no profile")
        only = ["--pid", ",".join(str(p) for p in self.pids)] if self.per_core else []
        script = subprocess.run([tools.perf(), "script", "-i", str(self.dir / "perf.data"), *only,
                                 "-F", "comm,tid,ip,sym,dso"], capture_output=True, text=True, errors="replace")
        if script.returncode != 0:
            raise ProfilerFailed(f"perf script failed: {script.stderr.strip()[-300:]}")
        self._folded = parse_perf_script(script.stdout)
        return self._folded

    def close(self) -> None:
        for fd in (self._ctl, self._ack):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in self.dir.iterdir():
            f.unlink(missing_ok=True)
        self.dir.rmdir()


class PySpy:
    """py-spy record --native: Python frames with the C frames under them (OpenSSL, zlib, the
    interpreter's own), of the driver and its subprocesses, in py-spy's raw folded format."""

    name = "py-spy"
    blind_spots = ("no kernel frames (perf gives the kernel's share); threads waiting on I/O are "
                   "left out as idle; --native stops the process at every sample, which costs wall time")

    def __init__(self, hz: int = PY_SPY_HZ):
        self.hz = hz
        self.dir = Path(tempfile.mkdtemp(prefix="clientlab-pyspy-"))
        self.proc: subprocess.Popen | None = None
        self._folded: Folded | None = None

    def start(self, pids: list[int]) -> None:
        binary = tools.py_spy()
        err = self.dir / "stderr"
        with open(err, "w") as stderr:
            self.proc = subprocess.Popen(
                [binary, "record", "--native", "--format", "raw", "--full-filenames", "--subprocesses",
                 "--rate", str(self.hz), "-o", str(self.dir / "raw.txt"), "--pid", str(pids[0])],
                stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr, start_new_session=True)
        _wait_for(err, "Sampling process", self.proc, "py-spy")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise ProfilerFailed("py-spy did not write its profile within 60 s") from None
        raw = self.dir / "raw.txt"
        if not raw.exists():
            raise ProfilerFailed(f"py-spy wrote no profile: {(self.dir / 'stderr').read_text(errors='replace')[-300:]}")
        self._folded = parse_pyspy(raw.read_text(errors="replace"))

    def folded(self) -> Folded:
        if self._folded is None:
            raise ProfilerFailed("py-spy gave no profile")
        return self._folded

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in self.dir.iterdir():
            f.unlink(missing_ok=True)
        self.dir.rmdir()


def _one_core(pid: int) -> int | None:
    """The core a process is pinned to, if it is pinned to one."""
    try:
        cores = os.sched_getaffinity(pid)
    except OSError:
        return None
    return next(iter(cores)) if len(cores) == 1 else None


def _jvm_perf_maps(pids: list[int]) -> None:
    """Each JVM of the tree writes its JIT-compiled methods' addresses to /tmp/perf-PID.map
    (`jcmd PID Compiler.perfmap`, JDK 17 on), which perf script reads: Java methods named without
    starting the JVM with any flag."""
    jcmd = shutil.which("jcmd")
    if jcmd is None:
        raise ProfilerFailed("jcmd is missing (the JDK's): Java frames cannot be named")
    for pid in pids:
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if comm == "java":
            done = subprocess.run([jcmd, str(pid), "Compiler.perfmap"], capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                raise ProfilerFailed(f"jcmd {pid} Compiler.perfmap failed: {(done.stderr or done.stdout).strip()[-200:]}")


def process_env(language: str) -> dict[str, str] | None:
    """What a driver's process must be started with for its profile, where its runtime names its
    JIT-compiled frames for perf only when asked at start (Node.js: a perf map of its JavaScript
    functions, and interpreted frames on the native stack); None: the cell's own process will do."""
    if language == "node":
        flags = "--perf-basic-prof --interpreted-frames-native-stack"
        return {"NODE_OPTIONS": f"{os.environ.get('NODE_OPTIONS', '')} {flags}".strip()}
    return None


def for_language(language: str) -> list[Sampler]:
    """The samplers a driver of `language` gets: perf always (the native layers and the kernel of
    every language), and the language's own profiler where the lab has one."""
    # Go keeps frame pointers, and perf's DWARF unwinder loses Go's stacks after one frame
    # (V8's JIT code keeps frame pointers too, where DWARF has nothing to unwind it by)
    samplers: list[Sampler] = [Perf(call_graph="fp" if language in ("go", "node") else "dwarf,16384",
                                    jvm_map=language == "java")]
    if language == "python":
        samplers.append(PySpy())
    return samplers
