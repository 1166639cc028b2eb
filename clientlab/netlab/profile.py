"""Named network profiles: one TOML file each in networks/, validated on load."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from clientlab import paths
from clientlab.datafiles import Found, read_named_toml, scan_folder
from clientlab.errors import LabInputError, describe_validation_error, quote


class Profile(BaseModel):
    """How the client reaches the server. All zero: namespaces and lab DNS, nothing else."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    description: str
    namespaces: bool = True              # false: loopback, the lab's own namespace
    rate_mbit: float | None = Field(default=None, gt=0, le=100_000)   # each way (down only with rate_up_mbit)
    rtt_ms: float = Field(default=0, ge=0, le=10_000)
    dns_delay_ms: float = Field(default=0, ge=0, le=10_000)
    dns_cache: bool = False              # dnsmasq in the client namespace, in front of the lab DNS
    max_conns: int = Field(default=0, ge=0, le=1_000_000)   # the server's cap on open client connections
    # "veth": the kernel's link (tbf for rate; delay by netem, or Toxiproxy, TCP only, where netem is
    # missing). "relay": clientlab-link carries every IP packet and gives the impairments below.
    link: Literal["veth", "relay"] = "veth"
    jitter_ms: float = Field(default=0, ge=0, le=10_000)        # each way: delay ± up to this, uniform
    loss_pct: float = Field(default=0, ge=0, lt=100)            # each way
    loss_burst: float = Field(default=0, ge=0, le=10_000)       # mean loss burst (packets); 0: independent
    reorder_pct: float = Field(default=0, ge=0, le=100)         # each way: held back by reorder_extra_ms
    reorder_extra_ms: float = Field(default=10, gt=0, le=10_000)
    rate_up_mbit: float | None = Field(default=None, gt=0, le=100_000)   # client → server, when not rate_mbit
    # TCP's congestion control in both namespaces. A new namespace inherits the machine's own
    # (bbr on some images), which ignores random loss where cubic backs off: pinned, so that TCP
    # figures do not depend on the machine, and like the QUIC stacks' default (all cubic).
    tcp_congestion: str = Field(default="cubic", pattern=r"^[a-z0-9_]{1,15}$")

    @field_validator("jitter_ms", "loss_pct", "loss_burst", "reorder_pct", "rate_up_mbit")
    @classmethod
    def _relay_only(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value and info.data.get("link") != "relay":
            raise ValueError(f'needs link = "relay" (the kernel link here has no netem, so only the user-space '
                             f'relay gives {info.field_name})')
        return value

    @model_validator(mode="after")
    def _relay_fits(self) -> Profile:
        if self.link == "relay" and not self.namespaces:
            raise ValueError('link = "relay" joins the lab\'s namespaces: it needs namespaces = true')
        if self.loss_burst and (self.loss_burst < 1 or not self.loss_pct
                                or self.loss_burst < self.loss_pct / (100 - self.loss_pct)):
            raise ValueError(f"loss_burst {self.loss_burst:g}: a mean burst length needs loss_pct > 0 and is at "
                             f"least 1 packet (and loss_pct/(100 - loss_pct)); 0 means independent losses")
        return self

    @property
    def rate_up(self) -> float | None:
        """Client → server rate (rate_mbit is the server → client one)."""
        return self.rate_up_mbit or self.rate_mbit

    def summary(self) -> str:
        if not self.namespaces:
            return "loopback"
        parts = [f"{self.rate_mbit:g} Mbit/s" if self.rate_mbit else "unshaped"]
        if self.rate_up_mbit:
            parts[0] = f"{self.rate_mbit:g} Mbit/s down" if self.rate_mbit else "unshaped down"
            parts.append(f"{self.rate_up_mbit:g} Mbit/s up")
        if self.rtt_ms:
            parts.append(f"{self.rtt_ms:g} ms RTT")
        if self.jitter_ms:
            parts.append(f"±{self.jitter_ms:g} ms jitter each way")
        if self.loss_pct:
            parts.append(f"{self.loss_pct:g} % loss each way" + (f" (bursts of {self.loss_burst:g})"
                                                                 if self.loss_burst else ""))
        if self.reorder_pct:
            parts.append(f"{self.reorder_pct:g} % reordered (+{self.reorder_extra_ms:g} ms)")
        if self.link == "relay":
            parts.append("user-space relay")
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


def discover(folder: Path | None = None) -> Found[Profile]:
    """The profiles that validate, by name, and why each of the others does not (scan() has
    both by name)."""
    known, broken = scan(folder)
    return Found(list(known.values()), list(broken.values()))


def get(name: str, folder: Path | None = None) -> Profile:
    profiles, broken = scan(folder)
    if name in broken:
        raise LabInputError(broken[name])
    if name not in profiles:
        raise LabInputError(f"unknown network profile {quote(name)} (known: {', '.join(profiles)})")
    return profiles[name]
