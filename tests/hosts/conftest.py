"""Lab hosts for the tests: network namespaces on this machine running Debian's sshd
(tests/hosts/nshost.py)."""

from __future__ import annotations

import pytest

from clientlab.netlab import namespaces as netlab
from tests.hosts import nshost


@pytest.fixture
def ns_hosts(tmp_path):
    """make(with_address=True, sshd=True) -> a NamespaceHost; every one made is removed after the
    test, passed or failed. Skips where there is no root or no sshd."""
    reason = nshost.why_unavailable()
    if reason:
        pytest.skip(reason)
    # a network lab starting elsewhere on the machine removes every clab- namespace: not ours meanwhile
    claim = netlab.claim()
    made: list[nshost.NamespaceHost] = []

    def make(with_address: bool = True, sshd: bool = True) -> nshost.NamespaceHost:
        host = nshost.NamespaceHost(tmp_path / f"host{len(made)}", with_address)
        made.append(host)
        if sshd:
            host.start_sshd()
        return host

    try:
        yield make
    finally:
        for host in made:
            host.stop()
        claim.release()


@pytest.fixture
def ns_host(ns_hosts) -> nshost.NamespaceHost:
    return ns_hosts()
