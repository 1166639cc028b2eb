"""The `clientlab` command: parse, load, run, store, print. One module per family of commands;
importing them registers their commands on `main`."""

from clientlab.cli import (  # noqa: F401
    behave,
    catalog,
    checks,
    experiments,
    fleet,
    hosts,
    network,
    results,
    run,
    store,
)
from clientlab.cli.common import entry, main

__all__ = ["entry", "main"]
