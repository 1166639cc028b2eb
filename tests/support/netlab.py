"""What the network lab leaves on the machine, for the tests that check it leaves nothing."""

from __future__ import annotations

from pathlib import Path

from clientlab.netlab import namespaces


def leftovers() -> list[str]:
    """The lab's namespaces, links, /etc/netns folders and mounts still on the machine, seen
    under the network lab's claim (a lab another process starts next is not taken for ours)."""
    claim = namespaces.claim()
    try:
        found = [ns for ns in namespaces.namespaces() if ns.startswith(namespaces.PREFIX)]
        found += namespaces.root_links()
        found += [str(p) for p in namespaces.NETNS_ETC.glob(f"{namespaces.PREFIX}*")]
        found += [line for line in Path("/proc/mounts").read_text().splitlines() if namespaces.PREFIX in line]
        return found
    finally:
        claim.release()
