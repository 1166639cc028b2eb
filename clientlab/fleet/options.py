"""What a batch passes on to `clientlab run` on its lab host: the options the user gave the fleet
run (those left at their defaults stay defaults there too), its own drivers, and folders named
relative to the checkout so that they resolve in the host's own checkout."""

from __future__ import annotations

from pathlib import Path

import click
from click.core import ParameterSource

from clientlab import paths

# options the coordinator itself answers: never passed on to a batch
COORDINATOR_ONLY = frozenset({"on_hosts", "hosts_path", "batch_size", "job_size", "baseline", "driver_names",
                              "json_path", "fmt", "no_wait", "server_host_name", "store_url"})


def _value(value: object) -> str:
    if isinstance(value, Path):
        resolved = value.resolve()
        # inside the checkout: relative, for the host's checkout; elsewhere the host must have it too
        return str(resolved.relative_to(paths.ROOT)) if resolved.is_relative_to(paths.ROOT) else str(resolved)
    return str(value)


def _given(option: click.Option, value: object) -> list[str]:
    flag = max(option.opts, key=len)
    if option.is_flag:
        if option.secondary_opts:
            return [flag if value else max(option.secondary_opts, key=len)]
        return [flag] if value else []
    if option.multiple:
        return [part for item in value for part in (flag, _value(item))]
    return [flag, _value(value)]


def passed_on(ctx: click.Context, skip: frozenset[str] = COORDINATOR_ONLY) -> list[str]:
    """The command line options given to `ctx`'s command, as arguments again (defaults left out)."""
    argv: list[str] = []
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name in skip:
            continue
        if ctx.get_parameter_source(param.name) in (ParameterSource.DEFAULT, None):
            continue
        value = ctx.params.get(param.name)
        if value is None:
            continue
        argv += _given(param, value)
    return argv


def batch_args(common: list[str], driver_ids: list[str]) -> list[str]:
    """A batch's `clientlab run` arguments: the fleet run's options and the batch's drivers."""
    return [*common, "--drivers", ",".join(driver_ids), "--format", "long"]
