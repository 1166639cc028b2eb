"""The hosts file: the lab's other machines, how to reach each over SSH and what each is for.

    known_hosts = "known_hosts"        # optional; default: known_hosts in the lab's data folder
    [[hosts]]
    name = "bench1"
    address = "192.168.10.11"
    port = 22                          # default 22
    user = "root"                      # default root
    key = "~/.ssh/clientlab_ed25519"   # the private key; relative paths from the file's folder
    roles = ["server", "lab"]          # default both
    lab_dir = "/srv/clientlab"         # default: the same path as this checkout's
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from clientlab import paths
from clientlab.datafiles import read_toml
from clientlab.errors import (
    LabInputError,
    describe_validation_error,
    quote,
    shown,
)

HOSTS_ENV = "CLIENTLAB_HOSTS"
# an address and a user go on ssh's command line: nothing there may read as an option
SHAPES = {
    "name": (re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}"), "letters, digits, '.', '_', '-' (not first)"),
    "address": (re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,252}"),
                "a host name or IP address: letters, digits, '.', ':', '-' (not first)"),
    "user": (re.compile(r"[A-Za-z_][A-Za-z0-9._-]{0,31}"), "a user name: letters, digits, '.', '_', '-'"),
}


class Host(BaseModel):
    """One machine of the lab, reached over SSH."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    address: str
    port: int = Field(default=22, ge=1, le=65535)
    user: str = "root"
    key: Path
    roles: tuple[Literal["server", "lab"], ...] = ("server", "lab")
    lab_dir: Path = paths.ROOT

    @field_validator("name", "address", "user")
    @classmethod
    def _shaped(cls, value: str, info: ValidationInfo) -> str:
        shape, wanted = SHAPES[info.field_name]
        if not shape.fullmatch(value):
            raise ValueError(f"{quote(value)} is not {wanted}")
        return value

    @field_validator("roles")
    @classmethod
    def _some_roles(cls, roles: tuple[str, ...]) -> tuple[str, ...]:
        if not roles or len(set(roles)) != len(roles):
            raise ValueError("name each role once, at least one of 'server', 'lab'")
        return roles

    @field_validator("lab_dir")
    @classmethod
    def _absolute(cls, lab_dir: Path) -> Path:
        if not lab_dir.is_absolute():
            raise ValueError("must be an absolute path on that host")
        return lab_dir

    def target(self) -> str:
        return f"{self.user}@{self.address}:{self.port}"

    def known_hosts_name(self) -> str:
        """How ssh names this host in a known_hosts file."""
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"


class HostsFile(BaseModel):
    """The hosts file's content, with relative paths resolved against its folder."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    known_hosts: Path | None = None
    hosts: tuple[Host, ...] = ()
    path: Path | None = Field(default=None, exclude=True)   # set by load(), not by the file

    @field_validator("hosts")
    @classmethod
    def _unique_names(cls, hosts: tuple[Host, ...]) -> tuple[Host, ...]:
        names = [h.name for h in hosts]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"host name {quote(twice[0])} appears twice: names must be unique")
        return hosts

    def known_hosts_path(self) -> Path:
        return self.known_hosts or paths.lab_home() / "known_hosts"

    def get(self, name: str) -> Host:
        for host in self.hosts:
            if host.name == name:
                return host
        known = ", ".join(h.name for h in self.hosts) or "none"
        raise LabInputError(f"{shown(self.path or 'hosts file')}: no host named {quote(name)} (hosts: {known})")

    def select(self, names: list[str] | None) -> list[Host]:
        """The hosts named (each must be in the file), or all of them."""
        return [self.get(n) for n in names] if names else list(self.hosts)


def default_path() -> Path:
    return paths.lab_home() / "hosts.toml"


def chosen_path(option: Path | None) -> Path:
    """--hosts FILE, else $CLIENTLAB_HOSTS, else hosts.toml in the lab's data folder."""
    if option is not None:
        return option
    return Path(os.environ[HOSTS_ENV]) if os.environ.get(HOSTS_ENV) else default_path()


def _resolved(raw: dict, folder: Path) -> dict:
    """`key` and `known_hosts` relative to the file's folder, `~` expanded (before validation,
    so that a wrong type is still reported by field)."""
    def resolve(value: object) -> object:
        return folder / Path(value).expanduser() if isinstance(value, str) and value else value

    raw = dict(raw)
    if "known_hosts" in raw:
        raw["known_hosts"] = resolve(raw["known_hosts"])
    if isinstance(raw.get("hosts"), list):
        raw["hosts"] = [{**h, "key": resolve(h.get("key"))} if isinstance(h, dict) and "key" in h else h
                        for h in raw["hosts"]]
    return raw


def load(path: Path) -> HostsFile:
    """The hosts file at `path`, or a LabInputError naming the file and each field that is wrong."""
    if not path.exists():
        raise LabInputError(f"{shown(path)}: no hosts file here: write one (docs/many-machines.md) "
                            f"or name it with --hosts FILE or ${HOSTS_ENV}")
    raw = read_toml(path, "hosts")
    try:
        hosts = HostsFile.model_validate(_resolved(raw, path.parent))
    except ValidationError as exc:
        raise LabInputError(describe_validation_error(path, exc)) from exc
    return hosts.model_copy(update={"path": path})
