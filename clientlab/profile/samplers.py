"""Sampling profilers attached to a driver's process tree for one trial's timed phase.

A sampler is started with the driver's process tree once the driver said `ready` (it is then
idle, waiting for `go`), sees the timed phase, and is stopped right after `done`; `folded()` then
gives its samples as folded stacks (folded.py). perf, py-spy and rbspy run outside the driver's
control group, so the CPU the lab reads for the trial is the driver's alone; excimer (PHP),
NYTProf (Perl) and JFR (Java) run inside the driver's process, and what they cost is in that CPU.
Either way the profiler's cost to the driver shows as the trial's wall time and CPU against the
cell's timed trials (its overhead, kept with the profile)."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Callable, Protocol

from clientlab.errors import LabError
from clientlab.measuring.procfs import process_tree
from clientlab.profile import tools
from clientlab.profile.folded import (Folded, parse_excimer, parse_jfr_json, parse_nytprofcalls, parse_perf_script,
                                     parse_pyspy, parse_rbspy)

READY_TIMEOUT_S = 20.0
ACK_TIMEOUT_S = 30.0   # perf answering on its control FIFO: seconds on a loaded host (5 s was missed)
PERF_HZ = 999        # cpu-clock samples a second of CPU (software timer: these VMs have no PMU)
PY_SPY_HZ = 250      # py-spy stops the process at each sample (--native): its cost grows with the rate
RBSPY_HZ = 250       # rbspy stops the process at each sample too (its default, for consistent stacks)
EXCIMER_PERIOD_S = 0.001   # PHP's excimer: a sample every ms of the thread's CPU time
JFR_PERIOD = "1 ms"  # JFR's ExecutionSample period (its "profile" settings say 10 ms)
JFR_RECORDING = "clientlab"
INPROC_ENV = "CLIENTLAB_PROFILE_DIR"   # where a driver's helper writes its in-process profile of each go


class ProfilerFailed(LabError):
    """A profiler did not start, or gave no profile: the cell keeps its figures, without layers."""


class Sampler(Protocol):
    name: str
    blind_spots: str

    def start(self, pids: list[int]) -> None: ...
    # halt: sampling off at once, without waiting for the profiler to finish; stop: halt, then wait
    # for it to write what it sampled. A trial halts every sampler before it stops any: perf takes a
    # while to write its data, and a sampler still on meanwhile would sample the driver's work after
    # `done` (its report, closing its client), which is none of the trial's CPU. `done_at`: the
    # Unix time the lab read `done`; a profiler whose samples carry their time keeps none after
    # it, since a driver writes its report at once, while the lab is still stopping its meter
    def halt(self, done_at: float | None = None) -> None: ...
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


# perf writes DWARF stacks at about 16 MB a second; it dies with the lab (_leashed), and a profiled
# trial writes a few hundred MB at most: past this perf stops writing, whatever else goes wrong.
PERF_MAX_SIZE = "2G"


PR_SET_PDEATHSIG = 1   # <linux/prctl.h>


def _leashed() -> Callable[[], None]:
    """A preexec_fn that ties a sampler to the lab: the kernel sends it SIGKILL when the lab's
    process dies, however it dies (a SIGKILL, an OOM kill, a crash: no clean-up of the lab's runs
    then). A sampler runs in a session of its own, so no signal to the lab's process group reaches
    it, and an orphaned perf record goes on writing until the disk is full. The lab starts its samplers from its main thread, which lives as long as the process (the signal
    follows the thread that forked). A lab that died between the fork and the prctl is seen by its
    pid no longer being the parent's."""
    lab = os.getpid()
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def leash() -> None:
        if prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != lab:
            os._exit(127)
    return leash


def _start(argv: list[str], out: IO[str]) -> subprocess.Popen:
    """A sampler's process: a session of its own (a Ctrl-C at the lab's terminal must not cut its
    data short) that dies with the lab."""
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                            preexec_fn=_leashed())


def _end(proc: subprocess.Popen | None) -> None:
    """A sampler's whole process group killed and reaped, if it still runs (any path out of a
    trial: an error, a timeout, a profile not wanted any more)."""
    if proc is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)   # its own session: the group is its pid
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()


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
        self._halted = False
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
            self.proc = _start(
                [binary, "record", "--no-buildid-cache", "-e", "cpu-clock",
                 "-F", str(self.hz), "--call-graph", self.call_graph, "-D", "-1", "--max-size", PERF_MAX_SIZE,
                 "--control", f"fifo:{ctl},{ack}", "-o", str(self.dir / "perf.data"), *target], stderr)
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

    def halt(self, done_at: float | None = None) -> None:
        if self.proc is not None and not self._halted:
            self._halted = True
            self._command("disable")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.halt()
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            _end(self.proc)
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
        _end(self.proc)
        for f in self.dir.iterdir():
            f.unlink(missing_ok=True)
        self.dir.rmdir()


class _Attached:
    """A language's sampler attached to the driver's process (and its subprocesses) for the
    timed phase: started with its recording command, stopped by SIGINT, and read from the file
    it wrote. Subclasses give the command, the line that says it samples, the file and its parser."""

    name = ""
    ready_line = ""
    output = ""

    def __init__(self, hz: int):
        self.hz = hz
        self.dir = Path(tempfile.mkdtemp(prefix=f"clientlab-{self.name.replace('-', '')}-"))
        self.proc: subprocess.Popen | None = None
        self._halted = False
        self._folded: Folded | None = None

    def command(self, pid: int) -> list[str]:
        raise NotImplementedError

    def parse(self, text: str) -> Folded:
        raise NotImplementedError

    def start(self, pids: list[int]) -> None:
        err = self.dir / "stderr"
        with open(err, "w") as stderr:
            self.proc = _start(self.command(pids[0]), stderr)
        _wait_for(err, self.ready_line, self.proc, self.name)

    def halt(self, done_at: float | None = None) -> None:
        if self.proc is not None and not self._halted:
            self._halted = True
            self.proc.send_signal(signal.SIGINT)  # it stops sampling, then writes its file

    def stop(self) -> None:
        if self.proc is None:
            return
        self.halt()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            _end(self.proc)
            raise ProfilerFailed(f"{self.name} did not write its profile within 60 s") from None
        out = self.dir / self.output
        if not out.exists():
            raise ProfilerFailed(f"{self.name} wrote no profile: "
                                 f"{(self.dir / 'stderr').read_text(errors='replace')[-300:]}")
        self._folded = self.parse(out.read_text(errors="replace"))

    def folded(self) -> Folded:
        if self._folded is None:
            raise ProfilerFailed(f"{self.name} gave no profile")
        return self._folded

    def close(self) -> None:
        _end(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


class PySpy(_Attached):
    """py-spy record --native: Python frames with the C frames under them (OpenSSL, zlib, the
    interpreter's own), of the driver and its subprocesses, in py-spy's raw folded format."""

    name = "py-spy"
    blind_spots = ("no kernel frames (perf gives the kernel's share); threads waiting on I/O are "
                   "left out as idle; --native stops the process at every sample, which costs wall time")
    ready_line = "Sampling process"
    output = "raw.txt"

    def __init__(self, hz: int = PY_SPY_HZ):
        super().__init__(hz)

    def command(self, pid: int) -> list[str]:
        return [tools.py_spy(), "record", "--native", "--format", "raw", "--full-filenames", "--subprocesses",
                "--rate", str(self.hz), "-o", str(self.dir / self.output), "--pid", str(pid)]

    def parse(self, text: str) -> Folded:
        return parse_pyspy(text)


class RbSpy(_Attached):
    """rbspy record --pid: Ruby methods by file, of the driver and its subprocesses, in rbspy's
    collapsed format. Ruby frames only (no C frames under them, no kernel): beside perf, which
    gives the native layers."""

    name = "rbspy"
    blind_spots = ("Ruby frames only, a C method unnamed ('(unknown) [c function]', counted for its Ruby caller): "
                   "what C code runs (OpenSSL, zlib, the allocator, the collector) is perf's, its share taken from "
                   "perf, not its callers; a thread off the CPU is not sampled; rbspy stops the process at each "
                   "sample, which costs wall time")
    ready_line = "rbspy is recording traces"
    output = "collapsed.txt"

    def __init__(self, hz: int = RBSPY_HZ):
        super().__init__(hz)

    def command(self, pid: int) -> list[str]:
        # --on-cpu: a thread waiting (for the server, in a system call) is not sampled
        return [tools.rbspy(), "record", "--pid", str(pid), "--subprocesses", "--rate", str(self.hz), "--on-cpu",
                "--format", "collapsed", "--file", str(self.dir / self.output),
                "--raw-file", str(self.dir / "raw.gz")]

    def parse(self, text: str) -> Folded:
        return parse_rbspy(text)


class InProcess:
    """A profiler that runs inside the driver's process (PHP's excimer, Perl's NYTProf): the
    driver's helper starts it at `go` when its process was started with INPROC_ENV (a profiling
    process of its own: process_env), stops it before `done`, and writes what it recorded to
    `<dir>/<pid>-<n>.<ext>` after `done`, before its report; read here once the trial is over."""

    name = "in-process"
    blind_spots = ""
    ext = "folded"

    def __init__(self) -> None:
        self.pid: int | None = None
        self.dir: Path | None = None
        self.before: set[str] = set()
        self._folded: Folded | None = None

    def start(self, pids: list[int]) -> None:
        self.pid = pids[0]
        try:
            environ = Path(f"/proc/{self.pid}/environ").read_bytes().split(b"\0")
        except OSError as exc:
            raise ProfilerFailed(f"{self.name}: the driver's environment cannot be read ({exc})") from None
        found = next((e.split(b"=", 1)[1].decode() for e in environ if e.startswith(INPROC_ENV.encode() + b"=")), None)
        if not found:
            raise ProfilerFailed(f"{self.name}: the driver's process was not started for a profile ({INPROC_ENV} unset)")
        self.dir = Path(found)
        self.before = {p.name for p in self.dir.glob(f"{self.pid}-*.{self.ext}")}

    def halt(self, done_at: float | None = None) -> None:
        pass  # the driver's helper stopped it before `done`

    def stop(self) -> None:
        pass

    def folded(self) -> Folded:
        if self._folded is not None:
            return self._folded
        if self.dir is None:
            raise ProfilerFailed(f"{self.name} gave no profile")
        new = sorted(p for p in self.dir.glob(f"{self.pid}-*.{self.ext}") if p.name not in self.before)
        if not new:
            raise ProfilerFailed(f"{self.name}: the driver wrote no profile of its timed phase into {self.dir}")
        self._folded = self.convert(new[-1])
        return self._folded

    def convert(self, path: Path) -> Folded:
        raise NotImplementedError

    def close(self) -> None:
        if self.dir is not None:
            for p in self.dir.glob(f"{self.pid}-*.{self.ext}"):
                if p.name not in self.before:
                    p.unlink(missing_ok=True)


class Excimer(InProcess):
    """PHP's excimer (ExcimerProfiler, CPU-time timer) in the driver's process: PHP functions by
    file, written by drivers/php/_lib as folded stacks."""

    name = "excimer"
    blind_spots = ("PHP's own functions only: an internal function (curl_exec, strlen) is no frame of its own, its "
                   "time is its PHP caller's unless perf places its C code (libcurl, the allocator, the kernel); "
                   "samples the thread's CPU time, so a wait is not sampled; a sample is taken at the interpreter's "
                   "next check after excimer's timer thread has run, which on a busy core is often after the next "
                   "blocking call: a busy function's time can show in the PHP function that calls curl_exec next")

    def convert(self, path: Path) -> Folded:
        return parse_excimer(path.read_text(errors="replace"))


class NYTProf(InProcess):
    """Perl's Devel::NYTProf in the driver's process, its subroutine profiler alone (no statement
    profiler): every call's exclusive time, folded into stacks by nytprofcalls. A tracer, not a
    sampler: every sub call and return costs time, the overhead kept with the profile."""

    name = "nytprof"
    ext = "nytprof"
    blind_spots = ("a tracer, not a sampler: each Perl sub call pays for its timing (the overhead is the profile's); "
                   "counts are µs of the thread's exclusive CPU time (a clock read is a system call: NYTProf's "
                   "own cost), so CPU in a system call is the caller's unless it is one of Perl's slow ops "
                   "(CORE:sysread…), which go to the kernel's share (perf's); XS code shows as its Perl name "
                   "(Net::SSLeay::read)")

    def convert(self, path: Path) -> Folded:
        calls = tools.nytprof()
        done = subprocess.run([calls, str(path)], capture_output=True, text=True, errors="replace", timeout=300)
        if done.returncode != 0:
            raise ProfilerFailed(f"nytprofcalls failed: {done.stderr.strip()[-300:]}")
        return parse_nytprofcalls(done.stdout)


class Jfr:
    """Java Flight Recorder's jdk.ExecutionSample (every JFR_PERIOD), recording from the start of a
    profiling JVM of its own (process_env: -XX:StartFlightRecording, warmed up as the cell's JVMs
    are); each trial's samples dumped after `done` (`jcmd PID JFR.dump`) and those of the timed
    phase kept, printed as JSON (`jfr print --json`): Java methods with their inlined frames, which
    the JVM's perf map loses. A recording started in a warm JVM (jcmd JFR.start) deoptimises its
    compiled code: its next seconds run interpreted and recompiling (java-httpclient's CPU a
    request 17× its timed trials'), so it is started with the process instead."""

    name = "jfr"
    blind_spots = ("Java frames of threads running Java code only (no native frames, no collector or compiler "
                   "threads: their share is perf's); a few threads sampled each period, at any point of the code "
                   "(no safepoint bias), but none inside a compiled loop with no call in it (nothing to walk the stack "
                   "from): perf's map names such a loop")

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="clientlab-jfr-"))
        self.jvms: list[int] = []
        self.window: tuple[float, float] = (0.0, 0.0)
        self._folded: Folded | None = None

    def start(self, pids: list[int]) -> None:
        tools.jfr()
        self.jvms = [p for p in pids if _comm(p) == "java"]
        if not self.jvms:
            raise ProfilerFailed("jfr: no JVM in the driver's process tree")
        self.window = (time.time(), 0.0)

    def halt(self, done_at: float | None = None) -> None:
        if not self.window[1]:
            self.window = (self.window[0], done_at or time.time())  # the samples kept end here

    def stop(self) -> None:
        self.halt()
        for pid in self.jvms:
            done = subprocess.run(["jcmd", str(pid), "JFR.dump", f"name={JFR_RECORDING}",
                                   f"filename={self.dir / f'{pid}.jfr'}"], capture_output=True, text=True, timeout=60)
            # jcmd answers 0 for a command the JVM refused: its text says so
            if done.returncode != 0 or not (self.dir / f"{pid}.jfr").exists():
                raise ProfilerFailed(f"jcmd {pid} JFR.dump failed (was the JVM started with its recording?): "
                                     f"{(done.stderr or done.stdout).strip()[-200:]}")

    def folded(self) -> Folded:
        if self._folded is not None:
            return self._folded
        out: Folded = {}
        for pid in self.jvms:
            rec = self.dir / f"{pid}.jfr"
            if not rec.exists():
                raise ProfilerFailed(f"jfr: JVM {pid} wrote no recording")
            done = subprocess.run([tools.jfr(), "print", "--json", "--stack-depth", "128", "--events",
                                   "jdk.ExecutionSample", str(rec)], capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                raise ProfilerFailed(f"jfr print failed: {done.stderr.strip()[-300:]}")
            for stack, n in parse_jfr_json(done.stdout, self.window).items():
                out[stack] = out.get(stack, 0) + n
        self._folded = out
        return out

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


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
        if _comm(pid) == "java":
            done = subprocess.run([jcmd, str(pid), "Compiler.perfmap"], capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                raise ProfilerFailed(f"jcmd {pid} Compiler.perfmap failed: {(done.stderr or done.stdout).strip()[-200:]}")


def process_env(language: str, runtime: str | None = None) -> dict[str, str] | None:
    """What a driver's process must be started with for its profile, where its runtime names its
    JIT-compiled frames for perf only when asked at start (Node.js: a perf map of its JavaScript
    functions, and interpreted frames on the native stack); None: the cell's own process will do.
    `runtime`: the kind of runtime line a Node driver runs on (`bun`, `deno`), None for Node's."""
    if language == "node" and runtime == "deno":
        # Deno is V8 too, and ignores NODE_OPTIONS: the same flags through its own variable, which
        # takes any V8 flag, so V8's log (process_argv) goes to the lab's folder here
        return {"DENO_V8_FLAGS": f"--perf-basic-prof,--interpreted-frames-native-stack,--logfile={_v8_log()}"}
    if language == "node" and runtime == "bun":
        # JavaScriptCore writes its JIT code only as JITDump (BUN_JSC_useJITDump), which perf reads
        # through `perf inject --jit`, not through the perf map the lab reads: no flag names its frames
        return None
    if language == "node":
        flags = "--perf-basic-prof --interpreted-frames-native-stack"
        return {"NODE_OPTIONS": f"{os.environ.get('NODE_OPTIONS', '')} {flags}".strip()}
    if language == "php":
        # excimer, loaded by this process alone (an extra ini folder: PHP's own stay as they are)
        tools.excimer()
        folder = _inproc_dir()
        (folder / "excimer.ini").write_text("extension=excimer\n")
        return {INPROC_ENV: str(folder), "PHP_INI_SCAN_DIR": f":{folder}",
                "CLIENTLAB_EXCIMER_PERIOD": str(EXCIMER_PERIOD_S)}
    if language == "java":
        # JFR from the JVM's start (a recording started later deoptimises the warm JVM: class Jfr),
        # only its execution samples, at most the last minute kept
        folder = _inproc_dir()
        settings = folder / "clientlab.jfc"
        settings.write_text(
            '<?xml version="1.0" encoding="UTF-8"?>\n<configuration version="2.0" label="clientlab">\n'
            '  <event name="jdk.ExecutionSample">\n    <setting name="enabled">true</setting>\n'
            f'    <setting name="period">{JFR_PERIOD}</setting>\n  </event>\n</configuration>\n')
        # its start-up lines go to stdout, which carries the protocol: off
        flag = f"-XX:StartFlightRecording=name={JFR_RECORDING},settings={settings},maxage=60s -Xlog:jfr+startup=off"
        return {"JAVA_TOOL_OPTIONS": f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} {flag}".strip()}
    if language == "perl":
        # NYTProf loaded (-d), off until the helper switches it on at go; subroutines only (the
        # statement profiler costs several times more), I/O ops as their own subs (slowops);
        # timed on the thread's CPU clock, not NYTProf's default CLOCK_MONOTONIC: its times split
        # perf's cpu-clock samples of the interpreter between the subs (layers.py), and in wall
        # time a sub the scheduler took off the core kept the whole wait
        tools.nytprof()
        folder = _inproc_dir()
        options = f"start=no:stmts=0:savesrc=0:compress=0:slowops=2:clock={time.CLOCK_THREAD_CPUTIME_ID}"
        return {INPROC_ENV: str(folder), "PERL5OPT": f"{os.environ.get('PERL5OPT', '')} -d:NYTProf".strip(),
                "NYTPROF": options}
    return None


def process_argv(language: str, runtime: str | None, argv: list[str]) -> list[str] | None:
    """The argv a driver's profiling process starts with where process_env is not enough, None:
    its own. --perf-basic-prof turns on V8's log, which Node writes (isolate-0x…-PID-v8.log) in
    the process's working directory, the driver's folder (driver-protocol §6); NODE_OPTIONS
    refuses --logfile, Node's command line takes it. A driver started otherwise than by `node`
    keeps its argv."""
    if language != "node" or runtime in ("deno", "bun") or not argv or Path(argv[0]).name != "node":
        return None
    return [argv[0], f"--logfile={_v8_log()}", *argv[1:]]


def _v8_log() -> Path:
    """V8's log file for a profiling process; V8 puts its isolate-0x…-PID- prefix before the file's
    name. The folder must exist: V8 writes its log to stdout, the protocol's, where it cannot
    open the file."""
    return _inproc_dir() / "v8.log"


def _inproc_dir() -> Path:
    """The folder in-process profilers write to: one for this lab process, in the temporary folder."""
    folder = Path(tempfile.gettempdir()) / f"clientlab-inproc-{os.getpid()}"
    if not folder.exists():
        folder.mkdir()
        atexit.register(shutil.rmtree, folder, True)
    return folder


def for_language(language: str) -> list[Sampler]:
    """The samplers a driver of `language` gets: perf always (the native layers and the kernel of
    every language), and the language's own profiler where the lab has one."""
    # Go keeps frame pointers, and perf's DWARF unwinder loses Go's stacks after one frame
    # (V8's JIT code keeps frame pointers too, where DWARF has nothing to unwind it by)
    samplers: list[Sampler] = [Perf(call_graph="fp" if language in ("go", "node") else "dwarf,16384",
                                    jvm_map=language in ("java", "kotlin"))]
    own = {"python": PySpy, "ruby": RbSpy, "php": Excimer, "perl": NYTProf, "java": Jfr}.get(language)
    if own is not None:
        samplers.append(own())
    return samplers
