"""UDP figures across the lab's link: an echo in the server namespace, paced probes from the client's.

    python -m clientlab.netlab.udpprobe echo HOST PORT            echo every datagram back (port 0: any)
    python -m clientlab.netlab.udpprobe probe HOST PORT COUNT [INTERVAL_MS]

The echo prints `{"udp_echo": "HOST:PORT"}` once it listens and stops when its stdin closes.
The probe sends COUNT numbered datagrams, one every INTERVAL_MS (default 1), and prints one JSON
line: how many came back, the round-trip loss, how many arrived after a later-sent one
(reordered), and the round-trip times. Loss is counted over the round trip: with a loss p
each way, a probe comes back with probability (1 - p)².
"""

from __future__ import annotations

import json
import os
import select
import socket
import statistics
import struct
import subprocess
import sys
import time
from typing import Any, Self

from clientlab.errors import LabError
from clientlab.netlab import namespaces
from clientlab.servers.control import first_json_line, stop

HEADER = struct.Struct("!IQ")   # sequence number, send time (ns, this host's monotonic clock)
PAYLOAD = 100                   # bytes per probe, a small datagram like a DNS or QUIC ACK
LINGER_S = 1.0                  # after the last probe, wait this long (plus twice the slowest RTT) for stragglers


def echo(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((host, port))
        print(json.dumps({"udp_echo": "{}:{}".format(*sock.getsockname())}), flush=True)
        stdin = sys.stdin.fileno()
        while True:
            ready, _, _ = select.select([sock, stdin], [], [])
            if stdin in ready and not os.read(stdin, 4096):
                return   # the lab that started it is gone
            if sock in ready:
                data, peer = sock.recvfrom(65535)
                sock.sendto(data, peer)


def probe(host: str, port: int, count: int, interval_ms: float = 1.0) -> dict[str, Any]:
    """Send `count` probes paced `interval_ms` apart and collect their echoes."""
    rtts: dict[int, float] = {}
    reordered = duplicates = highest = 0
    pad = bytes(PAYLOAD - HEADER.size)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect((host, port))
        sock.setblocking(False)
        start = time.monotonic_ns()
        sent, deadline = 0, None
        while True:
            now = time.monotonic_ns()
            if sent < count and now >= start + sent * interval_ms * 1e6:
                sock.send(HEADER.pack(sent + 1, now) + pad)
                sent += 1
                continue
            if sent == count and deadline is None:
                deadline = now + (LINGER_S + 2 * max(rtts.values(), default=0) / 1000) * 1e9
            if deadline is not None and (now >= deadline or len(rtts) == count):
                break
            wake = start + sent * interval_ms * 1e6 if sent < count else deadline
            ready, _, _ = select.select([sock], [], [], max(0.0, (wake - now) / 1e9))
            while ready:
                try:
                    data = sock.recv(65535)
                except BlockingIOError:
                    break
                seq, t0 = HEADER.unpack_from(data)
                if seq in rtts:
                    duplicates += 1
                    continue
                rtts[seq] = (time.monotonic_ns() - t0) / 1e6
                reordered += seq < highest
                highest = max(highest, seq)
    return summarize(count, rtts, reordered, duplicates)


def summarize(count: int, rtts: dict[int, float], reordered: int, duplicates: int) -> dict[str, Any]:
    times = sorted(rtts.values())
    lost = count - len(times)
    out: dict[str, Any] = {"sent": count, "received": len(times), "lost": lost,
                           "loss_pct": round(100 * lost / count, 3) if count else 0.0,
                           "reordered": reordered, "duplicates": duplicates}
    if times:
        def pct(q: float) -> float:
            return round(times[min(len(times) - 1, int(q * len(times)))], 3)
        out["rtt_ms"] = {"median": round(statistics.median(times), 3), "mean": round(statistics.fmean(times), 3),
                         "sd": round(statistics.pstdev(times), 3), "p5": pct(0.05), "p95": pct(0.95),
                         "min": round(times[0], 3), "max": round(times[-1], 3)}
    return out


def one_way_loss_pct(round_trip_loss_pct: float) -> float:
    """The loss each way that gives this round-trip loss, if both directions lose alike."""
    return 100 * (1 - (1 - round_trip_loss_pct / 100) ** 0.5)


class UdpEcho:
    """The echo in the server namespace, on the server's address (a port of its own)."""

    def __init__(self) -> None:
        argv = [*namespaces.in_ns(namespaces.SERVER_NS), sys.executable, "-m", "clientlab.netlab.udpprobe", "echo",
                namespaces.SERVER_IP, "0"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.port = int(first_json_line(self.proc, "UDP echo")["udp_echo"].rpartition(":")[2])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        stop(self.proc)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def measure(host: str, port: int, count: int, interval_ms: float = 1.0) -> dict[str, Any]:
    """Run the probe inside the client namespace and return its figures."""
    argv = [*namespaces.in_ns(namespaces.CLIENT_NS), sys.executable, "-m", "clientlab.netlab.udpprobe", "probe", host,
            str(port), str(count), str(interval_ms)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True,
                          timeout=60 + count * interval_ms / 1000)
    if done.returncode != 0:
        raise LabError(f"network lab: the UDP probe failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout)


def main(argv: list[str]) -> None:
    if argv[:1] == ["echo"] and len(argv) == 3:
        echo(argv[1], int(argv[2]))
    elif argv[:1] == ["probe"] and len(argv) in (4, 5):
        print(json.dumps(probe(argv[1], int(argv[2]), int(argv[3]), float(argv[4]) if len(argv) == 5 else 1.0)))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
