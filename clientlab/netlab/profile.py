"""Named network profiles: one TOML file each in networks/, validated on load."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clientlab import paths
from clientlab.errors import LabInputError, describe_validation_error, quote, read_named_toml, scan_folder


class Profile(BaseModel):
    """How the client reaches the server. All zero: namespaces and lab DNS, nothing else."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    description: str
    namespaces: bool = True              # false: loopback, the lab's own namespace
    rate_mbit: float | None = Field(default=None, gt=0, le=100_000)   # each way
    rtt_ms: float = Field(default=0, ge=0, le=10_000)
    dns_delay_ms: float = Field(default=0, ge=0, le=10_000)
    dns_cache: bool = False              # dnsmasq in the client namespace, in front of the lab DNS
    max_conns: int = Field(default=0, ge=0, le=1_000_000)   # the server's cap on open client connections

    def summary(self) -> str:
        if not self.namespaces:
            return "loopback"
        parts = [f"{self.rate_mbit:g} Mbit/s" if self.rate_mbit else "unshaped"]
        if self.rtt_ms:
            parts.append(f"{self.rtt_ms:g} ms RTT")
        if self.dns_delay_ms:
            parts.append(f"DNS +{self.dns_delay_ms:g} ms")
        if self.dns_cache:
            parts.append("DNS cache")
        return ", ".join(parts)


def networks_dir() -> Path:
    return paths.ROOT / "networks"


def load_file(path: Path) -> Profile:
    raw = read_named_toml(path, "network profile")
    try:
        return Profile.model_validate(raw)
    except ValidationError as exc:
        raise LabInputError(describe_validation_error(path, exc)) from exc


def scan(folder: Path | None = None) -> tuple[dict[str, Profile], dict[str, str]]:
    """Every profile that validates, and for each file that does not, why (by name): a broken
    profile is reported, not in the way of the others."""
    return scan_folder(folder or networks_dir(), load_file)


def discover(folder: Path | None = None) -> dict[str, Profile]:
    """The profiles that validate (scan() also says which do not, and why)."""
    return scan(folder)[0]


def get(name: str, folder: Path | None = None) -> Profile:
    profiles, broken = scan(folder)
    if name in broken:
        raise LabInputError(broken[name])
    if name not in profiles:
        raise LabInputError(f"unknown network profile {quote(name)} (known: {', '.join(profiles)})")
    return profiles[name]
