"""A stored run's status and time as `runs` and `show` say them."""

from __future__ import annotations

import calendar

from clientlab.output.runstatus import status_words, times_line

START = calendar.timegm((2026, 11, 27, 20, 8, 52))


def test_a_killed_run_says_its_process_was_gone_naming_it():
    run = {"status": "killed", "pid": 14672, "host": "vm"}
    assert status_words(run, "vm") == "killed: process gone, pid 14672 on vm"
    assert status_words(run, "vm", short=True) == "killed: process gone"
    assert status_words({"status": "killed", "pid": None, "host": None}, "vm") == "killed: process gone"


def test_a_running_run_of_another_host_says_it_was_not_checked():
    assert status_words({"status": "running", "pid": 5, "host": "lab1"}, "vm") == \
        "running on lab1, not checked from here"
    assert status_words({"status": "running", "pid": 5, "host": "vm"}, "vm") == "running"
    assert status_words({"status": "interrupted", "pid": 5, "host": "lab1"}, "vm") == "interrupted"


def test_the_time_line_gives_start_end_and_wall():
    run = {"status": "done", "started_at": START, "finished_at": START + 234}
    assert times_line(run) == "started 2026-11-27 20:08:52 UTC, ended 20:12:46 UTC, wall 3 min 54 s"
    run = {"status": "killed", "started_at": START, "finished_at": START + 5 * 3600 + 125}
    assert times_line(run) == ("started 2026-11-27 20:08:52 UTC, ended 2026-11-28 01:10:57 UTC (its last sign "
                               "of life), wall 5 h 02 min")
    assert times_line({"status": "running", "started_at": START, "finished_at": None}) == \
        "started 2026-11-27 20:08:52 UTC, not ended"
