"""A host name whose first address never answers: the network namespace the `happy-eyeballs`
behaviour case runs its driver in (docs/behaviour.md), with a bench server of its own.

    ns clab-he    driver ── 10.78.0.2/24 (clab-he1) ══ veth ══ (clab-he0) 10.78.0.1  root ns: bench server
                  10.78.0.3/32 ── route ── clab-hed (dummy): every packet sent there vanishes, counted
    /etc/netns/clab-he/hosts (bind-mounted over /etc/hosts by `ip netns exec`):
                  10.78.0.3 dark-first.lab.test
                  10.78.0.1 dark-first.lab.test

A dummy device drops what it is given and counts it (tx_packets), so a SYN to the dark address
gets no answer, no reset and no ICMP: the client's connect waits as for a black-holed host, and
the count says how many SYNs the client sent there. The name's two addresses come from the hosts
file, read by every resolver the drivers use (glibc's getaddrinfo, Go's own resolver, Java's
InetAddress through getaddrinfo, Node's dns.lookup, Rust's std), in the file's order; glibc then
sorts them by RFC 6724, whose rule 9 (the longer prefix shared with the source address) puts
10.78.0.3 (31 bits shared with 10.78.0.2) before 10.78.0.1 (30 bits), the file's order too, so
every resolver gives the dark address first. The namespace's resolv.conf names 127.0.0.1, where
nothing listens: a name that is not in the file fails at once instead of leaving the namespace.
"""

from __future__ import annotations

import json
from pathlib import Path

from clientlab.errors import LabError
from clientlab.netlab import namespaces
from clientlab.netlab.namespaces import NETNS_ETC, in_ns, sh
from clientlab.servers.bench import BenchServer

NS = "clab-he"
ROOT_DEV, NS_DEV, DARK_DEV = "clab-he0", "clab-he1", "clab-hed"
SERVER_IP, CLIENT_IP, DARK_IP = "10.78.0.1", "10.78.0.2", "10.78.0.3"
HOST = "dark-first.lab.test"


class DarkFirstHost:
    """The namespace, its link to the root namespace, the dark address and the hosts file, and a
    bench server on the link's root end, for one cell's life (`with DarkFirstHost() as lab`).
    Holds the machine's network-lab lock meanwhile (the names are fixed). Everything is removed
    on exit, on an error too; a killed lab's leftovers go with the next one's start or `net clean`."""

    host = HOST

    def __init__(self) -> None:
        reason = namespaces.why_unavailable()
        if reason:
            raise LabError(f"the dark-first host name: {reason}")
        self._claim = namespaces.claim()
        self.server: BenchServer | None = None
        try:
            namespaces.remove_all()
            _create()
            self.server = BenchServer(host=SERVER_IP)
        except BaseException:
            self.stop()
            raise

    @property
    def prefix(self) -> list[str]:
        """argv prefix that runs a driver inside the namespace (same PID)."""
        return in_ns(NS)

    def dark_packets(self) -> int:
        """Packets sent to the dark address so far (the dummy device's transmit count): its SYNs."""
        out = sh("ip", "-n", NS, "-j", "-s", "link", "show", DARK_DEV).stdout
        return int(json.loads(out)[0]["stats64"]["tx"]["packets"])

    def stop(self) -> None:
        try:
            if self.server is not None:
                self.server.stop()
                self.server = None
        finally:
            if self._claim.fd is not None:
                namespaces.remove_all()
                self._claim.release()

    def __enter__(self) -> "DarkFirstHost":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _create() -> None:
    sh("ip", "netns", "add", NS)
    sh("ip", "-n", NS, "link", "set", "lo", "up")
    sh("ip", "link", "add", ROOT_DEV, "type", "veth", "peer", "name", NS_DEV, "netns", NS)
    sh("ip", "addr", "add", f"{SERVER_IP}/24", "dev", ROOT_DEV)
    sh("ip", "link", "set", ROOT_DEV, "up")
    sh("ip", "-n", NS, "addr", "add", f"{CLIENT_IP}/24", "dev", NS_DEV)
    sh("ip", "-n", NS, "link", "set", NS_DEV, "up")
    sh("ip", "-n", NS, "link", "add", DARK_DEV, "type", "dummy")
    # no IPv6 on the dummy: its router solicitations and MLD reports would count as packets sent
    # to the dark address
    sh(*in_ns(NS), "sysctl", "-q", "-w", f"net.ipv6.conf.{DARK_DEV}.disable_ipv6=1")
    sh("ip", "-n", NS, "link", "set", DARK_DEV, "up")
    sh("ip", "-n", NS, "route", "add", f"{DARK_IP}/32", "dev", DARK_DEV)
    folder = NETNS_ETC / NS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hosts").write_text(hosts_file(_machine_hosts()))
    (folder / "resolv.conf").write_text("# clientlab: the dark-first host name's namespace resolves from its "
                                        "hosts file alone\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n")


def _machine_hosts() -> str:
    try:
        return Path("/etc/hosts").read_text()
    except OSError:
        return "127.0.0.1 localhost\n::1 localhost\n"


def hosts_file(machine: str) -> str:
    """The machine's hosts file (its own names stay resolvable: a JVM looks up its host name)
    with the name's two addresses after it, the dark one first."""
    kept = [line for line in machine.splitlines() if HOST not in line.split("#", 1)[0].split()[1:]]
    return "\n".join([*kept, f"# clientlab: {HOST}, its first address dark", f"{DARK_IP} {HOST}",
                      f"{SERVER_IP} {HOST}", ""])

