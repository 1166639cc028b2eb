"""How a server writes an answer: its send calls on one connection, as strace sees them.

A client's cost for a large body depends on how the answer reaches its socket: written whole at
once, it waits in the socket buffer and the client reads it in few wake-ups; written in pieces,
the client may sleep for each. The bench server's pattern is a choice (docs/bench-server.md), so
the lab checks it, and `clientlab crosscheck` shows it beside nginx's. The probe is a plain
keep-alive client fetching one path a few times while strace follows the server's processes;
strace is attached only for the probe, never during a timed trial.
"""

from __future__ import annotations

import http.client
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from clientlab.analysis import stats

SEND_CALLS = ("write", "writev", "sendfile", "sendmsg", "sendto")
ATTACH_TIMEOUT_S = 5.0
# `-yy` names a socket by its addresses: "writev(9<TCP:[127.0.0.1:8080->127.0.0.1:51234]>, …) = 335226"
_CALL = re.compile(r"^(?P<call>\w+)\((?P<fd>\d+)<TCP:\[(?P<ends>[^\]]*)\]>.*\)\s+=\s+(?P<ret>-?\d+)")


@dataclass(frozen=True)
class WritePattern:
    """A server's send calls for a number of answers on one connection."""

    answers: int
    calls: tuple[tuple[str, int], ...]  # each call and what it returned (bytes, or -1: it would block)

    @property
    def calls_per_answer(self) -> float:
        return len(self.calls) / self.answers

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(call for call, _ in self.calls))

    @property
    def bytes_per_call(self) -> float:
        """The median bytes a call sent (calls that would block left out)."""
        sent = [float(n) for _, n in self.calls if n > 0]
        return stats.median(sent) if sent else 0.0

    def describe(self) -> str:
        """E.g. "1.0 writev an answer, 335,226 B each"."""
        if not self.calls:
            return "no send call seen"
        return (f"{self.calls_per_answer:.1f} {'/'.join(self.kinds)} an answer, "
                f"{self.bytes_per_call:,.0f} B each (median)")

    def to_dict(self) -> dict:
        return {"answers": self.answers, "calls_per_answer": self.calls_per_answer, "kinds": list(self.kinds),
                "bytes_per_call": self.bytes_per_call}


def unavailable() -> str | None:
    """Why the probe cannot run here, or None."""
    return None if shutil.which("strace") else "strace is not installed (apt install strace)"


def parse(lines: list[str], client_port: int) -> list[tuple[str, int]]:
    """The send calls on the connection to `client_port`, in order, from strace -yy output."""
    calls = []
    for line in lines:
        m = _CALL.match(line.strip())
        if m and m["call"] in SEND_CALLS and m["ends"].endswith(f":{client_port}"):
            calls.append((m["call"], int(m["ret"])))
    return calls


def probe(pids: list[int], host: str, port: int, path: str, answers: int = 10) -> WritePattern:
    """Fetch `path` `answers` times on one keep-alive connection while strace follows `pids` (every
    thread of each); the server's send calls on that connection. Raises RuntimeError when strace
    cannot attach or an answer is not 200."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    with tempfile.TemporaryDirectory(prefix="clientlab-writes-") as scratch:
        prefix = Path(scratch) / "trace"
        argv = ["strace", "-f", "-ff", "-qq", "-yy", "-e", f"trace={','.join(SEND_CALLS)}", "-o", str(prefix)]
        for pid in pids:
            argv += ["-p", str(pid)]
        tracer = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _wait_attached(pids, tracer)
            conn = http.client.HTTPConnection(host, port, timeout=30)
            try:
                conn.connect()
                client_port = conn.sock.getsockname()[1]
                for _ in range(answers):
                    conn.request("GET", path)
                    resp = conn.getresponse()
                    resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"GET {path}: {resp.status} {resp.reason}")
            finally:
                conn.close()
            _settle(Path(scratch))
        finally:
            tracer.terminate()  # strace detaches and leaves the server running
            tracer.wait(10)
        lines = [line for trace in sorted(Path(scratch).glob("trace*")) for line in trace.read_text().splitlines()]
    return WritePattern(answers, tuple(parse(lines, client_port)))


def _wait_attached(pids: list[int], tracer: subprocess.Popen) -> None:
    """Until strace has attached to every thread of `pids` (their TracerPid is set)."""
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    while time.monotonic() < deadline:
        if tracer.poll() is not None:
            err = tracer.stderr.read().decode(errors="replace").strip() if tracer.stderr else ""
            raise RuntimeError(f"strace could not attach: {err[-300:] or f'exit {tracer.returncode}'}")
        if all(_traced(pid) for pid in pids):
            return
        time.sleep(0.02)
    raise RuntimeError(f"strace did not attach within {ATTACH_TIMEOUT_S:g} s")


def _settle(folder: Path, timeout_s: float = 2.0) -> None:
    """Until strace's files stop growing: a send call reaches the client before strace has seen
    it return and written its line, so the last answer's line may still be on its way."""
    deadline = time.monotonic() + timeout_s
    last = -1
    while time.monotonic() < deadline:
        size = sum(f.stat().st_size for f in folder.glob("trace*"))
        if size == last:
            return
        last = size
        time.sleep(0.1)


def _traced(pid: int) -> bool:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return True  # gone: nothing left to wait for
    for task in tasks:
        try:
            status = (task / "status").read_text()
        except OSError:
            continue
        if re.search(r"^TracerPid:\s+0$", status, re.M):
            return False
    return True
