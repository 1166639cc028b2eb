"""The results store itself: `clientlab store info | migrate | push`."""

from __future__ import annotations

import click

from clientlab.cli.common import (
    chosen_store,
    chosen_store_url,
    err,
    main,
    out,
    store_option,
)
from clientlab.errors import LabInputError
from clientlab.store import Store
from clientlab.store.core import upgrade_store
from clientlab.store.schema import HEAD
from clientlab.store.url import TEAM_STORE_ENV, chosen

PROGRESS_FROM, PROGRESS_EVERY = 20, 10  # runs: fewer are pushed before anyone would wait for a word


@main.group("store")
def store_group() -> None:
    """The results store: the embedded SQLite file, or a PostgreSQL team store (see docs/many-machines.md)."""


@store_group.command("info")
@store_option
def info_cmd() -> None:
    """Where the store is (password hidden), its back-end, schema revision and number of runs."""
    store = chosen_store()
    out.print(f"store:    {store.where}", highlight=False)
    out.print(f"backend:  {store.location.backend}", highlight=False)
    out.print(f"revision: {store.revision()}", highlight=False)
    out.print(f"runs:     {store.count_runs()}", highlight=False)
    store.close()


@store_group.command("migrate")
@store_option
def migrate_cmd() -> None:
    """Upgrade the store's schema to this clientlab's. A PostgreSQL team store is only upgraded
    this way (hosts still on an older clientlab then refuse it until they update); an SQLite file
    is upgraded whenever it is opened."""
    shown, before = upgrade_store(chosen(chosen_store_url()))
    if before == HEAD:
        out.print(f"{shown}: already at revision {HEAD}", highlight=False)
    else:
        out.print(f"{shown}: revision {before} -> {HEAD}", highlight=False)


@store_group.command("push")
@click.argument("run_refs", nargs=-1, metavar="[RUN]...")
@click.option("--to", "to_url", metavar="URL", envvar=TEAM_STORE_ENV, show_envvar=True,
              help="The store to copy into, e.g. postgresql://lab@db.example:5432/clientlab.")
@click.option("--from", "from_url", metavar="URL",
              help="The store to copy from. Default: $CLIENTLAB_STORE, else the lab's own SQLite file.")
def push_cmd(run_refs: tuple[str, ...], to_url: str | None, from_url: str | None) -> None:
    """Copy finished runs (RUN: ids, 'last' or ranges such as 3-7; default: every run) into a team
    store. Idempotent: a run already there (same uid) is not copied again; a run still running is
    skipped. One transaction a run: several hosts may push at once."""
    from clientlab.store.push import push

    if not to_url:
        raise LabInputError(f"where to push? give --to URL (or set ${TEAM_STORE_ENV})")
    source = Store(chosen(from_url))
    run_ids = _run_ids(source, run_refs) if run_refs else None
    target = Store(to_url)
    if source.location == target.location:
        raise LabInputError(f"--from and --to are the same store ({source.where})")

    def progress(done: int, total: int) -> None:
        if total >= PROGRESS_FROM and (done % PROGRESS_EVERY == 0 or done == total):
            err.print(f"pushed {done}/{total} run(s) to {target.where}", highlight=False)

    pushed = push(source, target, run_ids, progress)
    for run_id in pushed.running:
        err.print(f"[yellow]skipped run {run_id}: still running[/] (push it once it has finished)", highlight=False)
    out.print(f"{target.where}: {pushed.summary()}", highlight=False)


def _run_ids(store: Store, refs: tuple[str, ...]) -> list[int]:
    """Run ids from numbers, 'last' and ranges such as 3-7, each once."""
    return sorted(set(store.resolve_all(refs)))
