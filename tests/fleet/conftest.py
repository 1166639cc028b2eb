"""The namespace lab hosts of tests/hosts/conftest.py, for the fleet's tests."""

from tests.hosts.conftest import ns_hosts  # noqa: F401
