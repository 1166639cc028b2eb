"""`clientlab profile` prints the profiles of the run it made, not the store's newest run, which
may be another session's on the same store."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from clientlab.cli.run import own_run


def _run_by_another_process(path) -> None:
    code = f"from clientlab.store import Store; Store({str(path)!r}).start_run({{}}, {{'profile': True}})"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_run_this_process_made_is_found_when_another_session_started_one_after_it(store, tmp_path):
    began = time.time()
    mine = store.start_run({}, {"profile": True})
    _run_by_another_process(tmp_path / "results.sqlite")
    assert store.run_ids()[-1] != mine
    assert own_run(store, os.getpid(), began) == mine


def test_a_run_this_process_made_before_the_command_began_is_not_the_commands(store, tmp_path):
    store.start_run({}, {"profile": True})
    began = time.time() + 1
    _run_by_another_process(tmp_path / "results.sqlite")
    assert own_run(store, os.getpid(), began) is None
