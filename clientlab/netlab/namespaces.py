"""The network lab's namespaces: two of them joined by a veth pair, a control link, tc shaping.

    client ns  clab-client   10.77.0.1 (clab-c0) ──veth── 10.77.0.2 (clab-s0)  server ns  clab-server
    root ns    (the lab)     10.77.9.1 (clab-l0) ──veth── 10.77.9.2 (clab-s9)  server ns

Drivers run in the client namespace and only have a route to 10.77.0.0/24; the lab reaches the
servers' control ports over 10.77.9.0/24, which the client namespace cannot. Every name starts
with "clab-", so leftovers of a killed run are found and removed by name.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from rich.console import Console

from clientlab.errors import LabError
from clientlab.measuring.runlock import RunLock, lock_path
from clientlab.wrap import print_wrapped

PREFIX = "clab-"
CLIENT_NS, SERVER_NS = "clab-client", "clab-server"
CLIENT_IP, SERVER_IP = "10.77.0.1", "10.77.0.2"
LAB_IP, CONTROL_IP = "10.77.9.1", "10.77.9.2"
CLIENT_DEV, SERVER_DEV = "clab-c0", "clab-s0"
LAB_DEV, CONTROL_DEV = "clab-l0", "clab-s9"
NETNS_ETC = Path("/etc/netns")
NETLAB_LOCK = "clientlab-netlab.lock"   # one network lab per machine (claim)


def in_ns(ns: str) -> list[str]:
    """argv prefix that runs a program inside a namespace (same PID: `ip netns exec` execs)."""
    return ["ip", "netns", "exec", ns]


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise LabError(f"network lab: `{' '.join(argv)}` failed: {done.stderr.strip() or done.stdout.strip()}")
    return done


def why_unavailable() -> str | None:
    """None when the network lab can run here, else the reason."""
    if os.geteuid() != 0:
        return "the network lab needs root (network namespaces, veth, tc)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"the network lab needs `{tool}` (Debian package iproute2)"
    return None


def claim(wait: bool = True) -> RunLock:
    """The machine's network lab, for one NetLab's life: its namespaces and links have fixed
    names, so a second lab (a test run beside a measuring one, `net clean`) would tear down the
    first's. Held by another process: wait for it, saying who holds it (or raise LabBusy)."""
    lock = RunLock(path=lock_path(NETLAB_LOCK, env=None), what="the network lab")
    lock.acquire(wait, on_wait=lambda text: print_wrapped(Console(stderr=True), text))
    return lock


def namespaces() -> list[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def remove_all() -> list[str]:
    """Remove every lab namespace and link, killing what runs inside; returns what was removed."""
    removed = []
    for ns in namespaces():
        if not ns.startswith(PREFIX):
            continue
        kill_inside(ns)
        sh("ip", "netns", "delete", ns, check=False)
        shutil.rmtree(NETNS_ETC / ns, ignore_errors=True)
        removed.append(ns)
    # a root-side veth goes with its peer's namespace; remove one left without it
    for dev in root_links():
        sh("ip", "link", "delete", dev, check=False)
        removed.append(dev)
    for ns in (CLIENT_NS, SERVER_NS):
        shutil.rmtree(NETNS_ETC / ns, ignore_errors=True)
    return removed


def root_links() -> list[str]:
    """The lab's links left in the machine's own namespace."""
    links = json.loads(sh("ip", "-j", "link", "show").stdout or "[]")
    return [link["ifname"] for link in links if str(link.get("ifname", "")).startswith(PREFIX)]


def kill_inside(ns: str) -> None:
    """End every process inside the namespace: TERM, then KILL what is left after 3 s."""
    pids = [int(p) for p in sh("ip", "netns", "pids", ns, check=False).stdout.split()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 3
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if Path(f"/proc/{p}").exists() and not _zombie(p)]
            time.sleep(0.05)
        if not pids:
            break


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


def create(data_veth: bool = True) -> None:
    """The two namespaces, the data veth and the control veth, addresses up (no shaping yet).
    Without `data_veth` the client and server are not joined: the link relay joins them
    (its devices get their addresses from `address_data_link`)."""
    for ns in (CLIENT_NS, SERVER_NS):
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    if data_veth:
        sh("ip", "link", "add", CLIENT_DEV, "netns", CLIENT_NS, "type", "veth", "peer", "name", SERVER_DEV,
           "netns", SERVER_NS)
        address_data_link()
    sh("ip", "link", "add", LAB_DEV, "type", "veth", "peer", "name", CONTROL_DEV, "netns", SERVER_NS)
    sh("ip", "-n", SERVER_NS, "addr", "add", f"{CONTROL_IP}/24", "dev", CONTROL_DEV)
    sh("ip", "-n", SERVER_NS, "link", "set", CONTROL_DEV, "up")
    sh("ip", "addr", "add", f"{LAB_IP}/24", "dev", LAB_DEV)
    sh("ip", "link", "set", LAB_DEV, "up")
    # A client that opens a connection per request leaves one TIME_WAIT socket per request; after
    # ~10,000 within a minute (a few cells' worth), connect() spends milliseconds of system CPU
    # searching for a free port, and a later cell would measure the earlier ones. Debian reuses
    # TIME_WAIT ports on loopback (tcp_tw_reuse = 2); the lab's client namespace does it on its link.
    sh(*in_ns(CLIENT_NS), "sysctl", "-q", "-w", "net.ipv4.tcp_tw_reuse=1")


def set_tcp_congestion(algorithm: str) -> str:
    """Pin TCP's congestion control in both namespaces (a new namespace inherits the machine's);
    returns the machine's own, for the run's notes."""
    own = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    # Outside the machine's own namespace the kernel takes as default only an algorithm that
    # tcp_allowed_congestion_control lists (else EPERM): add it there (this only permits it; no
    # socket of the machine changes).
    allowed_file = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
    allowed = allowed_file.read_text().split()
    if algorithm not in allowed:
        sh("sysctl", "-q", "-w", f"net.ipv4.tcp_allowed_congestion_control={' '.join([*allowed, algorithm])}",
           check=False)   # an algorithm the kernel lacks is refused here, and named below
    for ns in (CLIENT_NS, SERVER_NS):
        done = sh(*in_ns(ns), "sysctl", "-q", "-w", f"net.ipv4.tcp_congestion_control={algorithm}", check=False)
        if done.returncode != 0:
            available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
            raise LabError(f"tcp_congestion {algorithm!r} cannot be set in the lab's namespaces "
                           f"({done.stderr.strip()}); this kernel has {', '.join(available)}")
    return own


def address_data_link() -> None:
    """The client's and the server's addresses on their ends of the data link, links up."""
    for ns, dev, addr in ((CLIENT_NS, CLIENT_DEV, CLIENT_IP), (SERVER_NS, SERVER_DEV, SERVER_IP)):
        sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")


def netem_available() -> bool:
    """Whether this kernel has netem (delay emulation); tried on the client's link, then removed."""
    added = sh("ip", "netns", "exec", CLIENT_NS, "tc", "qdisc", "add", "dev", CLIENT_DEV, "root", "netem",
               "delay", "1ms", check=False)
    if added.returncode != 0:
        return False
    sh("ip", "netns", "exec", CLIENT_NS, "tc", "qdisc", "del", "dev", CLIENT_DEV, "root", check=False)
    return True


def shape(rate_mbit: float | None, one_way_delay_ms: float = 0) -> None:
    """Rate per direction with tbf on each end's egress (client: upload, server: download);
    `one_way_delay_ms` with netem under it, only where netem exists."""
    for ns, dev in ((CLIENT_NS, CLIENT_DEV), (SERVER_NS, SERVER_DEV)):
        tc = ["ip", "netns", "exec", ns, "tc", "qdisc"]
        parent = ["root"]
        if one_way_delay_ms:
            sh(*tc, "add", "dev", dev, "root", "handle", "1:", "netem", "delay", f"{one_way_delay_ms}ms",
               "limit", "100000")
            parent = ["parent", "1:1"]
        if rate_mbit:
            rate_bps = rate_mbit * 1e6
            # burst: 10 ms worth of bytes (at least a few full frames), so tbf keeps the rate at HZ=250
            burst = max(int(rate_bps / 8 / 100), 64 * 1024)
            sh(*tc, "add", "dev", dev, *parent, "tbf", "rate", f"{rate_mbit:g}mbit", "burst", str(burst),
               "latency", "50ms")


def write_resolver(nameserver: str) -> None:
    """What the client namespace resolves with (`ip netns exec` bind-mounts /etc/netns/NS/*)."""
    folder = NETNS_ETC / CLIENT_NS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "resolv.conf").write_text(f"# clientlab network lab\nnameserver {nameserver}\noptions timeout:2 attempts:2\n")
    # the lab's names come from the lab DNS only, not from the machine's /etc/hosts
    (folder / "hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
