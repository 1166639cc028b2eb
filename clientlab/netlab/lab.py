"""NetLab: the network lab for one run — namespaces, services, the bench server inside — and its teardown.

It stands where a BenchServer stands for the runner (same control methods), and adds
`driver_prefix` (drivers run in the client namespace) and the lab DNS's counters to every
trial's snapshot under "dns".
"""

from __future__ import annotations

import time
from typing import Any

from clientlab.errors import LabError
from clientlab.netlab import namespaces, probe
from clientlab.netlab.profile import Profile
from clientlab.netlab.relay import LinkRelay
from clientlab.netlab.services import BENCH_HOST, DnsCache, LabDNS, LatencyProxy
from clientlab.servers.bench import BenchServer
from clientlab.servers.side import Endpoint

RTT_TOLERANCE = 0.10   # the measured RTT must be within 10 % of the profile's


class NetLab:
    def __init__(self, profile: Profile, cpu: int | None = None, check_rtt: bool = True):
        reason = namespaces.why_unavailable()
        if reason:
            raise LabError(f"network profile '{profile.name}': {reason}")
        self.profile = profile
        self.notes: list[str] = []
        self._parts: list[Any] = []
        self.relay: LinkRelay | None = None   # only where the profile asks for link = "relay"
        self._claim = namespaces.claim()           # no other lab's namespaces are torn down below
        try:
            self.leftovers = namespaces.remove_all()   # a killed run's namespaces and processes
            self._start(cpu, check_rtt)
        except BaseException:
            self.stop()
            raise

    def _start(self, cpu: int | None, check_rtt: bool) -> None:
        p = self.profile
        delay_done = self._link()
        try:
            own = namespaces.set_tcp_congestion(p.tcp_congestion)
        except LabError as exc:
            raise LabError(f"network profile '{p.name}': {exc}") from None
        self.notes.append(f"TCP congestion control {p.tcp_congestion} in both namespaces"
                          + (f" (the machine's own is {own})" if own != p.tcp_congestion else ""))
        self.dns = LabDNS(p.dns_delay_ms)
        self._parts.append(self.dns)
        if p.dns_cache:
            self._parts.append(DnsCache())
        namespaces.write_resolver("127.0.0.1" if p.dns_cache else namespaces.SERVER_IP)
        self.server = BenchServer(host=namespaces.SERVER_IP, control_host=namespaces.CONTROL_IP, cpu=cpu,
                                  wrap=namespaces.in_ns(namespaces.SERVER_NS), max_conns=p.max_conns,
                                  public_host=BENCH_HOST)
        self._parts.append(self.server)
        http_port, https_port = self.server.endpoint.http_port, self.server.endpoint.https_port
        # HTTP/3 is UDP: where the latency proxy (TCP only) gives the delay, it would bypass the
        # profile, so the lab offers no HTTP/3 there; the relay and an undelayed link carry it
        h3_port = self.server.endpoint.h3_port
        if p.rtt_ms and not delay_done:
            proxy = LatencyProxy(p.rtt_ms, {"http": http_port, "https": https_port})
            self._parts.append(proxy)
            http_port, https_port, h3_port = proxy.ports["http"], proxy.ports["https"], 0
            self.notes.append("no HTTP/3 on this profile: its delay comes from a TCP proxy (use a link = \"relay\" profile)")
        self.endpoint = Endpoint(host=BENCH_HOST, http_port=http_port, https_port=https_port, h3_port=h3_port,
                                 ca_file=self.server.endpoint.ca_file)
        self.driver_prefix = namespaces.in_ns(namespaces.CLIENT_NS)
        self.rtt_ms = probe.measure("rtt", BENCH_HOST, http_port, 10)
        if check_rtt and p.rtt_ms and abs(self.rtt_ms - p.rtt_ms) > RTT_TOLERANCE * p.rtt_ms:
            raise LabError(f"network profile '{p.name}': measured RTT {self.rtt_ms:.1f} ms is not within "
                           f"{RTT_TOLERANCE:.0%} of the asked {p.rtt_ms:g} ms")

    def _link(self) -> bool:
        """The namespaces and the link between them; whether the link itself gives the round-trip delay
        (else the latency proxy adds it)."""
        p = self.profile
        if p.link == "relay":
            namespaces.create(data_veth=False)
            self.relay = LinkRelay(p)
            self._parts.append(self.relay)
            self.notes.append("the link is the user-space relay (clientlab-link): delay, jitter, loss and rate "
                              "apply to every IP packet, TCP and UDP alike")
            return True
        namespaces.create()
        netem = namespaces.netem_available()
        delay_by_netem = bool(p.rtt_ms) and netem
        if p.rtt_ms and not netem:
            self.notes.append("no netem in this kernel: round-trip delay comes from the latency proxy (Toxiproxy)")
        namespaces.shape(p.rate_mbit, p.rtt_ms / 2 if delay_by_netem else 0)
        return delay_by_netem

    # -- what the run stores about the network ------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {"profile": self.profile.name, "summary": self.profile.summary(),
                "settings": self.profile.model_dump(), "measured_rtt_ms": round(self.rtt_ms, 3),
                "host": BENCH_HOST, "notes": self.notes}

    # -- the BenchServer surface the runner uses ------------------------------------------------

    def configure(self, **settings: Any) -> None:
        self.server.configure(**settings)

    def progress(self) -> dict[str, Any]:
        return self.server.counters()

    def rebind(self) -> None:
        return None  # the link's proxy and the namespace's addresses stay for the run

    def reset(self) -> None:
        self.server.reset()
        self.dns.counters(reset=True)
        if self.relay is not None:
            self.relay.counters(reset=True)

    def counters(self, reset: bool = False) -> dict[str, Any]:
        snapshot = self.server.counters(reset)
        snapshot["dns"] = self.dns.counters(reset)
        if self.relay is not None:
            snapshot["link"] = self.relay.counters(reset)   # per direction: packets, losses, reordering
        return snapshot

    def digest(self, path: str) -> dict[str, Any]:
        return self.server.digest(path)

    def alive(self) -> bool:
        return all(part.alive() for part in self._parts)

    def exit_reason(self) -> str:
        gone = [type(part).__name__ for part in self._parts if not part.alive()]
        return f"the network lab lost {', '.join(gone) or 'a part'} ({self.server.exit_reason()} for the bench server)"

    def cpu_ns(self) -> int | None:
        return self.server.cpu_ns()

    def local_pids(self) -> list[int]:
        return self.server.local_pids()

    def stop(self) -> None:
        for part in reversed(self._parts):
            try:
                part.stop()
            except LabError:
                pass
        self._parts.clear()
        if self._claim.fd is not None:
            namespaces.remove_all()
            self._claim.release()

    def __enter__(self) -> "NetLab":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def open_server_side(profile: Profile, cpu: int | None = None, check_rtt: bool = True) -> BenchServer | NetLab:
    """The server side of a run: a plain BenchServer on loopback, or the network lab (refused
    when its measured RTT is off the profile's, unless check_rtt is off)."""
    if not profile.namespaces:
        return BenchServer(cpu=cpu)
    started = time.monotonic()
    lab = NetLab(profile, cpu, check_rtt)
    lab.notes.append(f"network lab up in {time.monotonic() - started:.1f} s")
    return lab
