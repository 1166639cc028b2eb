"""The `clientlab` command: parse, load, run, store, print. One module per family of commands;
importing them registers their commands on `main`."""

from clientlab.cli import catalog, checks, experiments, hosts, network, results, run  # noqa: F401
from clientlab.cli.common import entry, main

__all__ = ["entry", "main"]
