"""`clientlab hosts check`: each host's facts beside this machine's: the same clientlab version
and driver builds or what differs, its clock against ours, whether it is quiet, what it is."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from clientlab import paths
from clientlab.hosts import facts, remote, ssh
from clientlab.hosts.hostsfile import Host

QUIET_LOAD_PER_CORE = 0.25   # a 1-minute load above a quarter of the cores: something else runs there
MAX_PARALLEL = 16


def here() -> dict:
    """This checkout's version and driver builds, what each host is compared with."""
    return {"version": facts.version(str(paths.ROOT)), "builds": facts.build_stamps(str(paths.lab_home()))}


def version_difference(ours: dict, theirs: dict) -> tuple[str, str] | None:
    """None when the two checkouts hold the same code, else (in a word or two, in full)."""
    if theirs.get("problem"):
        return "unknown there", f"no clientlab version there: {theirs['problem']}"
    if ours.get("problem"):
        return "unknown here", f"no clientlab version here: {ours['problem']}"
    if ours["commit"] != theirs["commit"]:
        return "other commit", f"commit {theirs['commit'][:10]} there, {ours['commit'][:10]} here"
    if ours["changes"] != theirs["changes"]:
        if not theirs["dirty"]:
            return "changes here", "same commit; here it has uncommitted changes, there none"
        if not ours["dirty"]:
            return "changes there", "same commit; there it has uncommitted changes, here none"
        return "other changes", "same commit, different uncommitted changes"
    return None


def build_differences(ours: dict[str, str], theirs: dict[str, str]) -> dict[str, list[str]]:
    """Drivers built only here, only there, and built from different inputs (the stamps differ)."""
    return {"only_here": sorted(ours.keys() - theirs.keys()), "only_there": sorted(theirs.keys() - ours.keys()),
            "different": sorted(d for d in ours.keys() & theirs.keys() if ours[d] != theirs[d])}


def quiet_verdict(quiet: dict, cores: int | None) -> tuple[bool, str]:
    """(quiet or not, why): no other process busy during the sample, and a low 1-minute load."""
    load = quiet["load"][0]
    limit = QUIET_LOAD_PER_CORE * (cores or 1)
    reasons = []
    if load > limit:
        reasons.append(f"load {load:.2f} > {limit:.2f}")
    if quiet["busy"]:
        reasons.append("busy: " + ", ".join(f"{p['name']} ({p['pid']}) {p['core_share']:.0%}" for p in quiet["busy"]))
    return not reasons, "; ".join(reasons) or f"load {load:.2f}, no busy process"


@dataclasses.dataclass
class HostCheck:
    """One host's answer to `hosts check`: a reading of its facts, or why there is none."""

    host: Host
    reading: remote.Reading | None = None
    error: ssh.HostError | None = None

    @property
    def reached(self) -> bool:
        return self.reading is not None

    def to_dict(self, ours: dict) -> dict:
        """The check as JSON: what was read there, and each comparison with here."""
        h = self.host
        row: dict = {"name": h.name, "target": h.target(), "roles": list(h.roles), "reached": self.reached,
                     "error": {"kind": self.error.kind, "message": str(self.error)} if self.error else None}
        if self.reading is None:
            return row
        r, f = self.reading, self.reading.facts
        is_quiet, why = quiet_verdict(f["quiet"], f["fingerprint"]["cores"])
        differ = build_differences(ours["builds"], f["builds"])
        differs = version_difference(ours["version"], f["version"])
        return {**row, "facts_by": r.source, "note": r.note, "rtt_ms": round(r.rtt_ms, 3),
                "clock_offset_ms": round(r.clock_offset_ms, 3), "seconds": round(r.seconds, 2),
                "version": {"there": f["version"], "here": ours["version"], "same": differs is None,
                            "difference": differs and differs[1], "in_short": differs and differs[0]},
                "builds": {"there": len(f["builds"]), "here": len(ours["builds"]), **differ,
                           "same": not any(differ.values())},
                "quiet": {**f["quiet"], "quiet": is_quiet, "why": why},
                "fingerprint": f["fingerprint"]}


def check_one(host: Host, known_hosts: Path) -> HostCheck:
    try:
        return HostCheck(host, reading=remote.read(host, known_hosts))
    except ssh.HostError as exc:
        return HostCheck(host, error=exc)
    except OSError as exc:  # no ssh client here
        return HostCheck(host, error=ssh.HostError(host, "failed", f"cannot run ssh: {exc}"))


def check(hosts: list[Host], known_hosts: Path) -> list[HostCheck]:
    """Every host at once (each takes about a second: its quiet sample), in the order given."""
    if not hosts:
        return []
    with ThreadPoolExecutor(max_workers=min(len(hosts), MAX_PARALLEL)) as pool:
        return list(pool.map(lambda h: check_one(h, known_hosts), hosts))
