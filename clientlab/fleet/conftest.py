"""The namespace lab hosts of clientlab/hosts/conftest.py, for the fleet's tests."""

from clientlab.hosts.conftest import ns_hosts  # noqa: F401
