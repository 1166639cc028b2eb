"""What a run says while it runs when nobody watches a terminal (a log file, nohup, CI)."""

import io
from types import SimpleNamespace

from rich.console import Console

from clientlab.output.progress import HEARTBEAT_S, ProgressEvents


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def events_on_a_pipe(clock: FakeClock) -> tuple[ProgressEvents, io.StringIO]:
    sink = io.StringIO()
    console = Console(file=sink, width=80, force_terminal=False)
    return ProgressEvents(4, console, clock=clock), sink


def test_a_piped_run_says_how_far_it_is_once_a_minute_while_cells_are_interleaved():
    clock = FakeClock()
    events, sink = events_on_a_pipe(clock)
    with events:
        events.cell_started("c-libcurl", "get-small")
        events.cell_started("python-requests", "get-small")
        for i in range(3):
            events.trial_done("c-libcurl", "get-small", SimpleNamespace(kind="timed", idx=i))
        assert "cells done" not in sink.getvalue()
        clock.now += HEARTBEAT_S + 1
        events.trial_done("python-requests", "get-small", SimpleNamespace(kind="timed", idx=0))
        first = sink.getvalue()
        assert "1 min: 0 of 4 cells done, 2 running, 4 trials" in first
        assert "python-requests: timed 0" in first
        clock.now += 1
        events.trial_done("python-requests", "get-small", SimpleNamespace(kind="timed", idx=1))
        assert sink.getvalue() == first, "a second line within the minute"


def test_a_terminal_run_draws_its_bar_and_prints_no_heartbeat_lines():
    clock = FakeClock()
    sink = io.StringIO()
    console = Console(file=sink, width=80, force_terminal=True)
    with ProgressEvents(1, console, clock=clock) as events:
        events.cell_started("c-libcurl", "get-small")
        clock.now += 10 * HEARTBEAT_S
        events.trial_done("c-libcurl", "get-small", SimpleNamespace(kind="timed", idx=0))
    assert "cells done" not in sink.getvalue()
