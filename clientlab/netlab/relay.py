"""The link relay: clientlab-link joins the client and server namespaces in user space.

Where a profile asks for `link = "relay"`, there is no veth between the two namespaces: the
relay makes a TUN device in each (named as the veth ends would be, with the same addresses)
and carries every IP packet across after the profile's delay, jitter, loss, reordering and
rate. It runs in the server namespace (so the lab's clean-up finds it) and exits when its
stdin closes, i.e. when the lab that started it is gone however it ended.
"""

from __future__ import annotations

import subprocess
from typing import Any

from clientlab.netlab import namespaces
from clientlab.netlab.profile import Profile
from clientlab.netlab.services import binary
from clientlab.servers.control import ControlClient, first_json_line, stop

QUEUE_MS = 100   # with a rate: the most a packet waits for the link before it is dropped (a deep 4G-like buffer)


def relay_args(p: Profile) -> list[str]:
    """The relay's impairment flags for a profile: half the round trip each way."""
    args = ["--delay-ms", f"{p.rtt_ms / 2:g}", "--jitter-ms", f"{p.jitter_ms:g}", "--loss-pct", f"{p.loss_pct:g}",
            "--loss-burst", f"{p.loss_burst:g}", "--reorder-pct", f"{p.reorder_pct:g}",
            "--reorder-extra-ms", f"{p.reorder_extra_ms:g}", "--queue-ms", str(QUEUE_MS)]
    if p.rate_mbit:
        args += ["--rate-down-mbit", f"{p.rate_mbit:g}"]
    if p.rate_up:
        args += ["--rate-up-mbit", f"{p.rate_up:g}"]
    return args


class LinkRelay:
    """clientlab-link between the lab's namespaces, its devices addressed and up."""

    def __init__(self, profile: Profile, seed: int = 0):
        argv = [*namespaces.in_ns(namespaces.SERVER_NS), binary("clientlab-link"), "--client-ns", namespaces.CLIENT_NS,
                "--client-dev", namespaces.CLIENT_DEV, "--server-dev", namespaces.SERVER_DEV,
                "--control", f"{namespaces.CONTROL_IP}:0", "--seed", str(seed), *relay_args(profile)]
        # stdin is a pipe the relay watches: it closes when this process ends, however it ends
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        info = first_json_line(self.proc, "link relay")
        host, _, port = info["control"].rpartition(":")
        self.control = ControlClient("link relay", host, int(port), self.proc)
        for ns, dev in ((namespaces.CLIENT_NS, namespaces.CLIENT_DEV), (namespaces.SERVER_NS, namespaces.SERVER_DEV)):
            # no IPv6 on the link: its router solicitations would be counted as the lab's traffic
            namespaces.sh(*namespaces.in_ns(ns), "sysctl", "-q", "-w", f"net.ipv6.conf.{dev}.disable_ipv6=1")
            namespaces.sh("ip", "-n", ns, "link", "set", dev, "txqueuelen", "1000")
        namespaces.address_data_link()

    def counters(self, reset: bool = False) -> dict[str, Any]:
        """Per direction ("up": client → server, "down"): packets read, lost (random, queue),
        reordered, sent, and how late after their due time they were sent."""
        return self.control.request("GET", "/counters" + ("?reset=1" if reset else ""))

    def config(self) -> dict[str, Any]:
        return self.control.request("GET", "/config")

    def configure(self, up: dict[str, float], down: dict[str, float]) -> dict[str, Any]:
        """Change the impairment live (the full settings of each direction, as config() gives them)."""
        return self.control.request("POST", "/config", {"up": up, "down": down})

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        self.control.close()
        stop(self.proc)
