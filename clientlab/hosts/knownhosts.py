"""The lab's known_hosts file: the host keys it trusts, read from a host with ssh-keyscan and
recorded only when the user has checked the key's fingerprint."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import subprocess
from pathlib import Path

from clientlab.errors import LabError, shown
from clientlab.hosts.hostsfile import Host

SCAN_TIMEOUT_S = 5
# the key ssh asks for first (OpenSSH 9's order); the one recorded, so it is the one ssh checks
KEY_PREFERENCE = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
                  "rsa-sha2-512", "ssh-rsa")


@dataclasses.dataclass(frozen=True)
class HostKey:
    """One public host key, as a known_hosts line holds it."""

    kind: str      # ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa
    blob: str      # base64

    def fingerprint(self) -> str:
        """SHA256:… as `ssh-keygen -l` and ssh's own messages print it."""
        digest = hashlib.sha256(base64.b64decode(self.blob)).digest()
        return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _parse(lines: str, name: str | None = None) -> list[HostKey]:
    """The keys of known_hosts lines (for `name` only, when given); comments and markers skipped."""
    keys = []
    for line in lines.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[0].startswith(("#", "@")):
            continue
        if name is None or name in fields[0].split(","):
            keys.append(HostKey(fields[1], fields[2]))
    return keys


def scan(host: Host) -> list[HostKey]:
    """The host's public keys, read over the network with ssh-keyscan, preferred kind first.
    Nothing is trusted by reading them."""
    argv = ["ssh-keyscan", "-T", str(SCAN_TIMEOUT_S), "-p", str(host.port), "--", host.address]
    try:
        done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=SCAN_TIMEOUT_S * 3)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"host {host.name}: cannot read its host key with ssh-keyscan: {exc}") from None
    keys = _parse(done.stdout)
    if not keys:
        why = done.stderr.strip().splitlines()
        why = [w for w in why if not w.startswith("#")]
        raise LabError(f"host {host.name} ({host.target()}): no SSH host key could be read within "
                       f"{SCAN_TIMEOUT_S} s" + (f": {why[-1]}" if why else " (unreachable, or no SSH server there)"))
    rank = {kind: i for i, kind in enumerate(KEY_PREFERENCE)}
    return sorted(keys, key=lambda k: rank.get(k.kind, len(rank)))


def recorded(known_hosts: Path, host: Host) -> list[HostKey]:
    """The keys the lab trusts for this host (none when the file does not exist yet)."""
    try:
        return _parse(known_hosts.read_text(), host.known_hosts_name())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise LabError(f"{shown(known_hosts)}: cannot read the lab's known hosts: {exc.strerror}") from None


def record(known_hosts: Path, host: Host, key: HostKey) -> None:
    """Trust `key` for this host: any key recorded for it before is replaced."""
    name = host.known_hosts_name()
    try:
        kept = [line for line in known_hosts.read_text().splitlines()
                if not line.split() or name not in line.split()[0].split(",")]
    except FileNotFoundError:
        kept = []
    known_hosts.parent.mkdir(parents=True, exist_ok=True)
    temporary = known_hosts.with_name(known_hosts.name + ".new")
    temporary.write_text("".join(f"{line}\n" for line in [*kept, f"{name} {key.kind} {key.blob}"]))
    temporary.replace(known_hosts)


def chosen(host: Host, offered: list[HostKey], expected: str | None) -> HostKey:
    """The key to trust: the one whose fingerprint is `expected`, or, with none expected, the
    preferred key offered (for the user to confirm). A fingerprint no offered key has is refused."""
    if expected is None:
        return offered[0]
    for key in offered:
        if key.fingerprint() == expected:
            return key
    seen = ", ".join(f"{k.kind} {k.fingerprint()}" for k in offered)
    raise LabError(f"host {host.name} ({host.target()}) offers {seen}: none is {expected}. NOT recorded: "
                   "the host may not be the one you think, or the fingerprint was mistyped")
