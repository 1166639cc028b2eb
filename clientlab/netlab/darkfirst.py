"""A host name whose first address never answers: the network lab's two namespaces as the
`happy-eyeballs` behaviour case needs them (docs/behaviour.md), for one cell.

    client ns clab-client  driver ── 10.77.0.1/32 (clab-c0) ══ veth ══ 10.77.0.2/24 (clab-s0)  server ns: bench server
                           10.77.3.1/32 ── route ── clab-hed ══ veth ══ clab-hes: every frame sent there dropped, counted
    root ns (the lab)      10.77.9.1 (clab-l0) ══ veth ══ 10.77.9.2 (clab-s9): the server's control port
    /etc/netns/clab-client/hosts (bind-mounted over /etc/hosts by `ip netns exec`):
                           10.77.3.1 dark-first.lab.test
                           10.77.0.2 dark-first.lab.test

The dark address's neighbour entry is a fixed MAC address that no device has, so a frame sent to
it leaves clab-hed (which counts it: tx_packets) and reaches clab-hes, whose kernel drops it as
addressed to another host, without a word: a SYN to the dark address gets no answer, no reset and
no ICMP, the client's connect waits as for a black-holed host, and the count says how many SYNs
the client sent there. (A dummy device would do the same in one piece; not every kernel has the
module.)

The name's two addresses come from the hosts file, which every resolver the drivers use reads
(glibc's getaddrinfo, Go's own resolver, Java's InetAddress through getaddrinfo, Node's
dns.lookup, Rust's std), in the file's order. glibc then sorts them by RFC 6724, whose rule 9
(the longer prefix shared with the source address) it applies to IPv4 within the source
address's subnet only; the client's address is a /32, so no destination is on its subnet, the
rule ties, and the file's order stands: the dark address first for every resolver. The
namespace's resolv.conf names 127.0.0.1, where nothing listens: a name that is not in the file
fails at once instead of leaving the namespace.

With `v6` (the `happy-eyeballs-v6` case) the name is RFC 8305's own shape: a dark IPv6 address and
the answering IPv4 one. The client namespace gets a global IPv6 source address (2001:db8:77::1 on
its loopback: documentation space, which RFC 6724's policy table files under ::/0) and a route to
the dark 2001:db8:77:3::1 through clab-hed, so an RFC 6724 sort finds the IPv6 destination
usable, with a source of its scope and label, and puts it first by precedence (40 against IPv4's
35). The hosts file lists the IPv4 address first: an IPv6 address that comes first does so
because the resolver sorted it there, as it would two answers of DNS, not because the file said
so. clab-hed then carries IPv6 with no address of its own and no router solicitations, so that
the packets it sends are those to the dark address alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from clientlab.errors import LabError
from clientlab.netlab import namespaces
from clientlab.netlab.namespaces import (CLIENT_DEV, CLIENT_IP, CLIENT_NS, CONTROL_IP, NETNS_ETC, SERVER_DEV,
                                         SERVER_IP, SERVER_NS, in_ns, sh)
from clientlab.servers.bench import BenchServer

DARK_DEV, SINK_DEV = "clab-hed", "clab-hes"
DARK_IP = "10.77.3.1"
DARK_IP6 = "2001:db8:77:3::1"     # the v6 case's dark address (RFC 3849 documentation space)
CLIENT_IP6 = "2001:db8:77::1"     # the client namespace's global IPv6 source address
HOST = "dark-first.lab.test"
NOBODY_MAC = "02:00:00:00:00:01"   # a locally administered address no device here has


class DarkFirstHost:
    """The network lab's namespaces with the dark address and the hosts file, and a bench server
    in the server namespace, for one cell's life (`with DarkFirstHost() as lab`). Holds the
    machine's network-lab lock meanwhile (the names are fixed). Everything is removed on exit,
    on an error too; a killed lab's leftovers go with the next one's start or `net clean`."""

    host = HOST

    def __init__(self, v6: bool = False) -> None:
        reason = namespaces.why_unavailable()
        if reason:
            raise LabError(f"the dark-first host name: {reason}")
        self.v6 = v6
        self.dark_ip = DARK_IP6 if v6 else DARK_IP
        self._claim = namespaces.claim()
        self.server: BenchServer | None = None
        try:
            namespaces.remove_all()
            _create(v6)
            self.server = BenchServer(host=SERVER_IP, control_host=CONTROL_IP, wrap=in_ns(SERVER_NS))
        except BaseException:
            self.stop()
            raise

    @property
    def prefix(self) -> list[str]:
        """argv prefix that runs a driver inside the client namespace (same PID)."""
        return in_ns(CLIENT_NS)

    def dark_packets(self) -> int:
        """Packets sent to the dark address so far (clab-hed's transmit count): its SYNs."""
        out = sh("ip", "-n", CLIENT_NS, "-j", "-s", "link", "show", DARK_DEV).stdout
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


def _create(v6: bool = False) -> None:
    namespaces.create(data_veth=False)
    sh("ip", "link", "add", CLIENT_DEV, "netns", CLIENT_NS, "type", "veth", "peer", "name", SERVER_DEV,
       "netns", SERVER_NS)
    sh("ip", "-n", SERVER_NS, "addr", "add", f"{SERVER_IP}/24", "dev", SERVER_DEV)
    sh("ip", "-n", SERVER_NS, "link", "set", SERVER_DEV, "up")
    # a /32 (not the network lab's /24): glibc compares prefixes of IPv4 addresses only within the
    # source's subnet, so neither address is preferred and the hosts file's order stands
    sh("ip", "-n", CLIENT_NS, "addr", "add", f"{CLIENT_IP}/32", "dev", CLIENT_DEV)
    sh("ip", "-n", CLIENT_NS, "link", "set", CLIENT_DEV, "up")
    sh("ip", "-n", CLIENT_NS, "route", "add", f"{SERVER_IP}/32", "dev", CLIENT_DEV)
    sh("ip", "-n", CLIENT_NS, "link", "add", DARK_DEV, "type", "veth", "peer", "name", SINK_DEV)
    # no IPv6 on the sink; none on the dark end either, but for the v6 case, where it carries
    # IPv6 with no address (so no duplicate address detection nor MLD report for one) and no
    # router solicitation: any of those would count as packets sent to the dark address
    sh(*in_ns(CLIENT_NS), "sysctl", "-q", "-w", f"net.ipv6.conf.{SINK_DEV}.disable_ipv6=1")
    if v6:
        for key, value in (("addr_gen_mode", 1), ("router_solicitations", 0), ("accept_ra", 0), ("accept_dad", 0)):
            sh(*in_ns(CLIENT_NS), "sysctl", "-q", "-w", f"net.ipv6.conf.{DARK_DEV}.{key}={value}")
    else:
        sh(*in_ns(CLIENT_NS), "sysctl", "-q", "-w", f"net.ipv6.conf.{DARK_DEV}.disable_ipv6=1")
    for dev in (DARK_DEV, SINK_DEV):
        sh("ip", "-n", CLIENT_NS, "link", "set", dev, "up")
    dark = DARK_IP6 if v6 else DARK_IP
    if v6:
        sh("ip", "-n", CLIENT_NS, "addr", "add", f"{CLIENT_IP6}/128", "dev", "lo", "nodad")
    # a fixed neighbour: no ARP (nor neighbour solicitation), whose unanswered requests would end
    # the connect with "no route to host" after 3 s
    sh("ip", "-n", CLIENT_NS, "neigh", "add", dark, "lladdr", NOBODY_MAC, "dev", DARK_DEV, "nud", "permanent")
    sh("ip", "-n", CLIENT_NS, "route", "add", f"{dark}/{128 if v6 else 32}", "dev", DARK_DEV)
    folder = NETNS_ETC / CLIENT_NS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hosts").write_text(hosts_file(_machine_hosts(), v6))
    (folder / "resolv.conf").write_text("# clientlab: the dark-first host name's namespace resolves from its "
                                        "hosts file alone\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n")


def _machine_hosts() -> str:
    try:
        return Path("/etc/hosts").read_text()
    except OSError:
        return "127.0.0.1 localhost\n::1 localhost\n"


def hosts_file(machine: str, v6: bool = False) -> str:
    """The machine's hosts file (its own names stay resolvable: a JVM looks up its host name)
    with the name's two addresses after it: the dark one first; with `v6`, the answering IPv4
    one first and the dark IPv6 one after it (a resolver that sorts by RFC 6724 puts it first)."""
    kept = [line for line in machine.splitlines() if HOST not in line.split("#", 1)[0].split()[1:]]
    if v6:
        return "\n".join([*kept, f"# clientlab: {HOST}, a dark IPv6 address and an answering IPv4 one",
                          f"{SERVER_IP} {HOST}", f"{DARK_IP6} {HOST}", ""])
    return "\n".join([*kept, f"# clientlab: {HOST}, its first address dark", f"{DARK_IP} {HOST}",
                      f"{SERVER_IP} {HOST}", ""])
