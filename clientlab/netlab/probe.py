"""Link figures measured the way a client sees them, from inside the client namespace.

    python -m clientlab.netlab.probe rtt HOST PORT [COUNT]         median request round trip (ms)
    python -m clientlab.netlab.probe download HOST PORT BYTES      receive rate (Mbit/s)
    python -m clientlab.netlab.probe upload HOST PORT BYTES        send rate (Mbit/s)

Each prints one JSON line. The lab runs it with `ip netns exec` before a run (RTT) and for
`clientlab net check` (rates). HTTP/1.1 on one connection, written by hand so that nothing
but the link is measured.
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import time

from clientlab.errors import LabError

from clientlab.netlab import namespaces

CHUNK = 1 << 20


def _response(sock: socket.socket, buf: bytearray, sink: bool = False) -> int:
    """Read one response (Content-Length framing); returns the body size."""
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("server closed the connection")
        head += data
    header, _, rest = head.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in header.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    left = length - len(rest)
    view = memoryview(buf)
    while left > 0:
        n = sock.recv_into(view, min(left, len(buf)))
        if not n:
            raise ConnectionError("server closed the connection mid-body")
        left -= n
    return length


def rtt_ms(host: str, port: int, count: int = 10) -> float:
    buf = bytearray(CHUNK)
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        request = f"GET /bytes/0 HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
        times = []
        for i in range(count + 1):   # the first one warms the connection up
            t0 = time.perf_counter()
            sock.sendall(request)
            _response(sock, buf)
            if i:
                times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def download_mbit(host: str, port: int, size: int) -> float:
    buf = bytearray(CHUNK)
    with socket.create_connection((host, port), timeout=120) as sock:
        t0 = time.perf_counter()
        sock.sendall(f"GET /bytes/{size} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        _response(sock, buf)
        return size * 8 / (time.perf_counter() - t0) / 1e6


def upload_mbit(host: str, port: int, size: int) -> float:
    chunk = bytes(CHUNK)
    with socket.create_connection((host, port), timeout=120) as sock:
        t0 = time.perf_counter()
        sock.sendall(f"POST /echo HTTP/1.1\r\nHost: {host}\r\nContent-Length: {size}\r\n"
                     "Content-Type: application/octet-stream\r\n\r\n".encode())
        left = size
        while left > 0:
            n = min(left, CHUNK)
            sock.sendall(chunk[:n])
            left -= n
        _response(sock, bytearray(CHUNK))
        return size * 8 / (time.perf_counter() - t0) / 1e6


def measure(what: str, host: str, port: int, arg: int) -> float:
    """Run this probe inside the client namespace and return its figure."""
    argv = [*namespaces.in_ns(namespaces.CLIENT_NS), sys.executable, "-m", "clientlab.netlab.probe", what, host, str(port), str(arg)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise LabError(f"network lab: the {what} probe failed: {done.stderr.strip()[-500:]}")
    return float(json.loads(done.stdout)["value"])


def main(argv: list[str]) -> None:
    what, host, port, arg = argv[0], argv[1], int(argv[2]), int(argv[3]) if len(argv) > 3 else 10
    fn = {"rtt": rtt_ms, "download": download_mbit, "upload": upload_mbit}[what]
    print(json.dumps({"probe": what, "value": fn(host, port, arg)}))


if __name__ == "__main__":
    main(sys.argv[1:])
