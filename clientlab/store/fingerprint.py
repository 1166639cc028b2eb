"""Fingerprints: what must stay the same for two results to compare, as one digest each.

- a host's: the fields of `clientlab.measuring.machine.describe()` (and of `clientlab.hosts.facts.fingerprint()`)
  that shape a measurement — CPU model, cores, memory, kernel, OS and the Go that built the bench
  server. The host name (who, not what) and the orchestrator's Python are left out: two identical
  hosts share a fingerprint, an upgraded kernel makes a new one;
- a cell's: the driver and its versions, the scenario and its parameters, the network profile the
  run was on (its name and settings, not the RTT measured that day) and the host's fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

HOST_FIELDS = ("cpu_model", "cores", "memory_gib", "kernel", "os", "go")


def digest(document: Any) -> str:
    """sha256 of the document's canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def host_fingerprint(machine: dict[str, Any]) -> str:
    return digest({key: machine.get(key) for key in HOST_FIELDS})


def network_of(config: dict[str, Any]) -> dict[str, Any]:
    """The network part of a run's config that defines it: the profile's name and settings."""
    net = config.get("net")
    if not isinstance(net, dict):  # some runs (selfbench's) name just the profile
        return {"profile": net, "settings": None}
    return {"profile": net.get("profile"), "settings": net.get("settings")}


def cell_fingerprint(cell: dict[str, Any], config: dict[str, Any], host: str | None) -> str:
    """`cell` with its driver, versions, scenario and params decoded (as `Store.cells` gives them)."""
    return digest({"driver": cell["driver"], "versions": cell.get("versions"), "scenario": cell["scenario"],
                   "params": cell.get("params"), "network": network_of(config), "host": host})
