"""The processes inside the network lab besides the bench server: the lab DNS, an optional
dnsmasq cache in the client namespace, and the latency proxy (Toxiproxy)."""

from __future__ import annotations

import shutil
import subprocess
import time
from typing import Any

from clientlab import paths
from clientlab.errors import LabError
from clientlab.netlab import namespaces
from clientlab.servers.control import ControlClient, first_json_line, stop

ZONE = "lab.test"
BENCH_HOST = f"bench.{ZONE}"   # the name drivers are given; any name under the zone answers too
PROXY_API_PORT = 8474


def binary(name: str) -> str:
    """The path of a program set-up built into the lab's bin/ (LabError naming it when missing)."""
    path = paths.lab_binary(name)
    if not path.exists():
        raise LabError(f"network lab: {path} is missing (run ./setup.sh)")
    return str(path)


class LabDNS:
    """clientlab-dns in the server namespace: the lab's zone, an answer delay, query counters."""

    def __init__(self, delay_ms: float):
        argv = [*namespaces.in_ns(namespaces.SERVER_NS), binary("clientlab-dns"), "--listen", f"{namespaces.SERVER_IP}:53",
                "--control", f"{namespaces.CONTROL_IP}:0", "--zone", ZONE, "--answer", namespaces.SERVER_IP,
                "--delay-ms", str(int(delay_ms))]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        info = first_json_line(self.proc, "lab DNS")
        host, _, port = info["control"].rpartition(":")
        self.control = ControlClient("lab DNS", host, int(port), self.proc)

    def counters(self, reset: bool = False) -> dict[str, Any]:
        return self.control.request("GET", "/counters" + ("?reset=1" if reset else ""))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        self.control.close()
        stop(self.proc)


class DnsCache:
    """dnsmasq on 127.0.0.1 in the client namespace, forwarding to the lab DNS and caching
    answers (min-cache-ttl: the lab DNS answers with TTL 0, which would defeat a cache)."""

    def __init__(self) -> None:
        if shutil.which("dnsmasq") is None:
            raise LabError("network lab: the DNS cache needs dnsmasq (Debian package dnsmasq-base; run ./setup.sh)")
        argv = [*namespaces.in_ns(namespaces.CLIENT_NS), "dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts",
                "--no-poll", f"--server={namespaces.SERVER_IP}", "--listen-address=127.0.0.1", "--bind-interfaces",
                "--port=53", "--cache-size=10000", "--min-cache-ttl=3600", "--user=root", "--pid-file",
                "--log-facility=-"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.2)
        if self.proc.poll() is not None:
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            raise LabError(f"network lab: dnsmasq did not start: {err.strip()}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        stop(self.proc)


class LatencyProxy:
    """Toxiproxy in the server namespace: a proxy per bench server port, each delaying both
    directions by half the round trip. Drivers are given the proxy's ports."""

    def __init__(self, rtt_ms: float, upstreams: dict[str, int]):
        argv = [*namespaces.in_ns(namespaces.SERVER_NS), binary("toxiproxy-server"), "-host", namespaces.CONTROL_IP,
                "-port", str(PROXY_API_PORT)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.control = ControlClient("latency proxy", namespaces.CONTROL_IP, PROXY_API_PORT, self.proc)
        self._wait_ready()
        self.ports: dict[str, int] = {}
        half = rtt_ms / 2
        for name, upstream in upstreams.items():
            proxy = self.control.request("POST", "/proxies", {
                "name": name, "listen": f"{namespaces.SERVER_IP}:0", "upstream": f"{namespaces.SERVER_IP}:{upstream}",
                "enabled": True}, ok=(200, 201))
            self.ports[name] = int(proxy["listen"].rpartition(":")[2])
            for stream in ("upstream", "downstream"):
                self.control.request("POST", f"/proxies/{name}/toxics", {
                    "name": f"latency_{stream}", "type": "latency", "stream": stream, "toxicity": 1.0,
                    "attributes": {"latency": int(half), "jitter": 0}}, ok=(200, 201))

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 10
        while True:
            try:
                self.control.request("GET", "/version")
                return
            except LabError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode(errors="replace")[-1000:] if self.proc.stderr else ""
                    stop(self.proc)
                    raise LabError(f"network lab: the latency proxy did not start\n{err}") from None
                time.sleep(0.1)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        self.control.close()
        stop(self.proc)
