"""Every command that reads or writes results takes --store, and the store chosen follows
--store > $CLIENTLAB_STORE > the lab's own file."""

from __future__ import annotations

from pathlib import Path

import pytest

from clientlab import paths
from clientlab.cli import main
from clientlab.errors import LabInputError
from clientlab.store.url import chosen, parse

RESULT_COMMANDS = ("run", "experiment", "crosscheck", "show", "diagnose", "runs", "export", "report", "findings",
                   "spread", "compare")


def test_every_command_that_reads_or_writes_results_takes_store():
    missing = [name for name in RESULT_COMMANDS
               if "--store" not in [opt for param in main.commands[name].params for opt in param.opts]]
    assert missing == []


def test_the_option_wins_over_the_environment_which_wins_over_the_lab_file(monkeypatch):
    monkeypatch.delenv("CLIENTLAB_STORE", raising=False)
    assert chosen(None) == paths.results_db()
    monkeypatch.setenv("CLIENTLAB_STORE", "postgresql://lab@db:5432/team")
    assert chosen(None) == "postgresql://lab@db:5432/team" and chosen("/tmp/x.sqlite") == "/tmp/x.sqlite"


def test_store_urls_are_read_as_their_back_ends_and_shown_without_password():
    team = parse("postgresql://lab:s3cret@db.example:6543/clientlab")
    assert (team.backend, team.url.drivername, team.server) == ("postgresql", "postgresql+psycopg", "db.example:6543")
    assert team.shown == "postgresql://lab:***@db.example:6543/clientlab"
    assert parse("sqlite:////var/lab/r.sqlite").path == Path("/var/lab/r.sqlite")
    assert parse("sqlite:///r.sqlite").path == Path("r.sqlite") and parse("~/r.sqlite").path == Path.home() / "r.sqlite"
    with pytest.raises(LabInputError, match=r"'mysql://lab:\*\*\*@db/x' is not a store"):
        parse("mysql://lab:pw@db/x")
    with pytest.raises(LabInputError, match="names no database"):
        parse("postgresql://lab@db:5432")
