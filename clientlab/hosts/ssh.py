"""SSH to a lab host with the OpenSSH client: host keys checked against the lab's known_hosts,
never accepted on the way, and ssh's failures turned into errors that say what to do."""

from __future__ import annotations

import os
import selectors
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self

from clientlab.errors import LabError, shown
from clientlab.hosts import knownhosts
from clientlab.hosts.hostsfile import Host

CONNECT_TIMEOUT_S = 5
ALIVE_INTERVAL_S = 5   # a host that stops answering mid-session is given up after two of these
SSH_FAILED = 255       # ssh's own exit code; any other is the remote command's


class HostError(LabError):
    """A host could not be used; `kind` says why: unknown-key, changed-key, unreachable, auth, failed."""

    def __init__(self, host: Host, kind: str, message: str):
        super().__init__(f"host {host.name} ({host.target()}): {message}")
        self.host, self.kind = host, kind


def ssh_argv(host: Host, known_hosts: Path, command: str, forwards: tuple[str, ...] = ()) -> list[str]:
    """ssh with the lab's options only (no user or system ssh_config): batch mode, strict host keys
    from the lab's known_hosts and no other, the host's own key. `forwards` are ssh's own forwarding
    arguments (`-L 127.0.0.1:5000:127.0.0.1:6000`, `-R …`): the session fails at once when one
    cannot be set up, rather than run without it."""
    options = {
        "BatchMode": "yes", "StrictHostKeyChecking": "yes", "UserKnownHostsFile": str(known_hosts),
        "GlobalKnownHostsFile": "/dev/null", "UpdateHostKeys": "no", "CheckHostIP": "no",
        "ConnectTimeout": str(CONNECT_TIMEOUT_S), "ServerAliveInterval": str(ALIVE_INTERVAL_S),
        "ServerAliveCountMax": "2", "IdentitiesOnly": "yes", "PreferredAuthentications": "publickey",
        "ControlMaster": "no", "ControlPath": "none", "ForwardAgent": "no", "ClearAllForwardings": "yes",
        "RequestTTY": "no", "LogLevel": "ERROR",
    }
    if forwards:
        options.update(ClearAllForwardings="no", ExitOnForwardFailure="yes")
    argv = ["ssh", "-F", "none", "-i", str(host.key), "-p", str(host.port), "-l", host.user]
    for key, value in options.items():
        argv += ["-o", f"{key}={value}"]
    return [*argv, *forwards, "--", host.address, command]


def _check_key_file(host: Host) -> None:
    if not host.key.is_file():
        raise HostError(host, "auth", f"the lab's key for it, {shown(host.key)}, does not exist (the hosts "
                                      "file's `key`)")


UNREACHABLE = (("Connection refused", "connection refused: nothing listens on port {port}"),
               ("banner exchange", "it took the connection, but no SSH server spoke"),
               ("timed out", "no answer"), ("No route to host", "no route to host"),
               ("Network is unreachable", "network is unreachable"),
               ("Could not resolve hostname", "its address does not resolve"),
               ("Connection closed", "it closed the connection before SSH began"),
               ("Connection reset", "it reset the connection before SSH began"))


def failure(host: Host, known_hosts: Path, stderr: str) -> HostError:
    """What ssh's exit code 255 meant, from what it printed (it has no other way to say)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if "Host key verification failed." in lines:
        if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr or knownhosts.recorded(known_hosts, host):
            return HostError(host, "changed-key", (
                "its SSH host key has CHANGED since the lab trusted it: REFUSED. Someone may be "
                "intercepting the connection, or the host was reinstalled. Compare the new key's "
                "fingerprint with the one the host itself shows (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub "
                f"on its console), then run `clientlab hosts trust {host.name}` to replace it"))
        return HostError(host, "unknown-key", (
            f"its SSH host key is not in the lab's known hosts ({shown(known_hosts)}): refused. Run "
            f"`clientlab hosts trust {host.name}` to check its fingerprint and record it"))
    if "Permission denied" in stderr or "UNPROTECTED PRIVATE KEY" in stderr or "Load key" in stderr:
        return HostError(host, "auth", (
            f"the host refused the lab's key {shown(host.key)} for user {host.user}: add {shown(host.key)}.pub "
            f"to ~{host.user}/.ssh/authorized_keys there" + (f" ({lines[-1]})" if lines else "")))
    for pattern, reason in UNREACHABLE:
        if pattern in stderr:
            return HostError(host, "unreachable",
                             f"unreachable within {CONNECT_TIMEOUT_S} s: {reason.format(port=host.port)}")
    return HostError(host, "failed", f"ssh failed: {lines[-1] if lines else 'no message'}")


def run(host: Host, known_hosts: Path, command: str, timeout_s: float = 60) -> subprocess.CompletedProcess:
    """Run a shell command on the host; ssh's own failures raise HostError, the command's exit
    code is the caller's to judge."""
    _check_key_file(host)
    argv = ssh_argv(host, known_hosts, command)
    try:
        done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise HostError(host, "failed", f"`{command}` did not end within {timeout_s:g} s") from None
    if done.returncode == SSH_FAILED:
        raise failure(host, known_hosts, done.stderr)
    return done


class Session:
    """One ssh process running a command on the host, spoken to a line at a time."""

    def __init__(self, host: Host, known_hosts: Path, command: str, forwards: tuple[str, ...] = ()):
        _check_key_file(host)
        self.host, self.known_hosts = host, known_hosts
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the session's, closed on __exit__
        self._proc = subprocess.Popen(ssh_argv(host, known_hosts, command, forwards), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._stderr)
        self._buffer = b""

    def send(self, data: bytes) -> None:
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # the session ended: the next read says why

    def read_line(self, deadline: float) -> bytes:
        """The next line from the host; by `deadline` (time.monotonic()) or a HostError."""
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    self.close()
                    raise HostError(self.host, "failed", "no answer in time: the session was given up")
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise self._ended()
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def alive(self) -> bool:
        """ssh, and so the command on the host, still runs (a host that stopped answering ends it
        within ALIVE_INTERVAL_S × 2)."""
        return self._proc.poll() is None

    def ended(self) -> HostError:
        """Why the session ended, as an error to raise (it is closed first)."""
        return self._ended()

    def _ended(self) -> HostError:
        code = self.close()
        self._stderr.seek(0)
        stderr = self._stderr.read().decode(errors="replace")
        if code == SSH_FAILED:
            return failure(self.host, self.known_hosts, stderr)
        said = stderr.strip().splitlines()
        return HostError(self.host, "failed",
                         f"the command on the host exited {code}" + (f": {said[-1]}" if said else ""))

    def close(self) -> int:
        """End the session (killing ssh if it still runs); ssh's exit code."""
        for pipe in (self._proc.stdin, self._proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        try:
            code = self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        return code

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._stderr.close()
