"""The long form as a person reads it at 80 columns: every line within the width, a cell's figures
on two lines, drivers that were not measured collapsed, noise said only where it changes a rank,
and a summary per scenario in hyperfine's manner."""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from clientlab.output.long import long_lines, summary_lines, ties
from clientlab.output.markdown import markdown_text
from clientlab.record import Cell, CellFigures, WallStats


def _measured(driver: str, scenario: str, rate: float, precision: float = 0.02) -> Cell:
    wall = 1000 / rate
    figures = CellFigures(throughput=rate, unit="req/s", precision=precision, requests=1000, cpu_user_s=wall / 2,
                          cpu_sys_s=wall / 10, peak_rss_kb=20480, startup_s=0.5, scenario_requests=2000,
                          wall_s=WallStats(median=wall, ci_low=wall * (1 - precision), ci_high=wall * (1 + precision)))
    return Cell(driver=driver, scenario=scenario, status="ok", figures=figures)


def _unsupported(driver: str, scenario: str) -> Cell:
    return Cell(driver=driver, scenario=scenario, status="unsupported",
                reason="manifest does not claim keepalive: the curl command closes every connection it opens")


CELLS = [
    _measured("c-libcurl", "get-small", 48_494, 0.027), _measured("python-requests", "get-small", 1_731, 0.03),
    _measured("python-httpx", "get-small", 1_700, 0.04), _unsupported("cli-curl", "get-small"),
    _measured("c-libcurl", "get-json-335k", 3_239, 0.05), _measured("python-requests", "get-json-335k", 179, 0.06),
    _unsupported("cli-curl", "get-json-335k"),
]


def test_every_line_fits_80_columns_and_a_cell_takes_two_lines():
    lines = [line.plain for line in long_lines(CELLS, 80)]
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    first = next(i for i, line in enumerate(lines) if line.startswith("  c-libcurl"))
    assert "48,494 req/s" in lines[first] and "1.00×" in lines[first] and "CPU" in lines[first]
    assert "n=1,000 of 2,000" in lines[first + 1] and "mem 20.0 MiB" in lines[first + 1]


def test_a_wide_terminal_gets_a_cell_on_one_line():
    lines = [line.plain for line in long_lines(CELLS, 160)]
    line = next(line for line in lines if line.startswith("  c-libcurl"))
    assert "48,494 req/s" in line and "n=1,000 of 2,000" in line


def test_a_driver_not_measured_on_several_scenarios_is_one_line():
    lines = [line.plain for line in long_lines(CELLS, 80)]
    said = [line for line in lines if "cli-curl" in line]
    assert len(said) == 1 and said[0].startswith("  cli-curl (2 of 2 scenarios): unsupported:")
    assert lines.index("Not measured") > max(i for i, line in enumerate(lines) if "python-requests" in line)


def test_noise_is_said_only_where_two_drivers_cannot_be_ranked_apart():
    ranked = [CELLS[0], CELLS[1], CELLS[2]]
    assert ties(ranked) == {"python-requests": ["python-httpx"], "python-httpx": ["python-requests"]}
    lines = [line.plain for line in long_lines(CELLS, 80)]
    assert sum("level with" in line for line in lines) == 2
    assert not any("noisy" in line for line in lines)


def test_the_summary_says_how_many_times_faster_the_fastest_ran_with_its_uncertainty():
    lines = [line.plain for line in summary_lines(CELLS)]
    assert lines[0] == "Summary" and lines[1] == "get-small: c-libcurl ran"
    assert lines[2].strip() == "28.02 ± 1.13 times faster than python-requests"


def test_the_markdown_form_is_a_table_per_scenario_fastest_first():
    text = markdown_text(CELLS, "run 1")
    assert "### get-small\n\n| driver | throughput | ± | × fastest | CPU a request | peak memory |" in text
    rows = [line for line in text.splitlines() if line.startswith("| python-") or line.startswith("| c-")]
    assert rows[0].startswith("| c-libcurl | 48,494 req/s | ±2.7% | 1.00× |")
    assert "- cli-curl (2 of 2 scenarios): unsupported:" in text


def _terminal_screen(tmp_path, command: str, done) -> str:
    """What a tmux window of 80 columns shows after `command`, read once `done(screen)` holds; kept
    in tmp_path as the test's artefact. The tmux server is the test's own, so the command runs
    with this process's environment (the lab's lock and home), not an older server's."""
    socket, session = f"clientlab-test-{time.monotonic_ns()}", "screen"
    tmux = ["tmux", "-L", socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "80", "-y", "60",
                    f"{command}; echo CLIENTLAB-TEST-EXIT $?; sleep 120"], check=True)
    try:
        screen = ""
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", session, "-S", "-"],
                                    capture_output=True, text=True, check=True).stdout
            if done(screen) or "CLIENTLAB-TEST-EXIT" in screen:
                break
            time.sleep(0.2)
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)
    (tmp_path / "screen.txt").write_text(screen)
    return screen


def _fits_80_columns_without_cut_words(screen: str) -> None:
    lines = screen.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    # no word cut at the right edge: a line that fills the width ends where a word ends
    full = [i for i, line in enumerate(lines) if len(line) == 80]
    assert all(lines[i][-1] != " " and not (lines[i + 1][:1].isalnum() and lines[i][-1].isalnum())
               for i in full if i + 1 < len(lines)), [lines[i] for i in full]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_show_in_a_terminal_of_80_columns_wraps_no_line_and_cuts_no_word(tmp_path, store):
    # a stored run shown by the real command in a real terminal of 80 columns, read off the screen
    run_id = store.start_run({"cpu_model": "test", "cores": 2, "kernel": "k"}, {"placement": "shared"})
    for cell in CELLS:
        cell_id = store.start_cell(run_id, cell.driver, cell.scenario, {}, "requests")
        store.finish_cell(cell_id, cell.status, cell.reason, cell.figures.to_json() if cell.figures else None, {})
    store.finish_run(run_id, "complete")
    command = f"{sys.executable} -m clientlab show --store {shlex.quote(str(store.where))} {run_id}"
    screen = _terminal_screen(tmp_path, command,
                              lambda screen: "Summary" in screen and "python-requests" in screen.split("Summary")[-1])
    assert "Summary" in screen and "c-libcurl" in screen
    _fits_80_columns_without_cut_words(screen)


@pytest.mark.serial
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_run_in_a_terminal_of_80_columns_shows_progress_table_and_summary_within_the_width(tmp_path):
    # the real command measuring real drivers, as a person starts it: the progress bar, the
    # unsupported driver's one line, the table and the summary, all read off an 80-column screen
    command = (f"{sys.executable} -m clientlab run --store sqlite:///{tmp_path / 'runs.sqlite'}"
               " -d c-libcurl,python-requests,cli-curl -s get-small,get-json-335k --trials 3"
               " --no-allocator-modes")
    screen = _terminal_screen(tmp_path, command, lambda screen: "CLIENTLAB-TEST-EXIT" in screen)
    assert "CLIENTLAB-TEST-EXIT 0" in screen, screen[-2000:]
    _fits_80_columns_without_cut_words(screen)
    table = screen.split("Summary")[0]
    assert "get-small" in table and "get-json-335k" in table and "req/s" in table
    assert "cli-curl (2 of 2 scenarios): unsupported:" in table
    assert "times faster than python-requests" in screen.split("Summary")[1]


def test_a_cell_of_one_timed_trial_says_so_instead_of_a_spread():
    one = _measured("c-libcurl", "get-small", 48_494, 0.0)
    one = dataclasses.replace(one, figures=dataclasses.replace(one.figures, trials=1))
    text = "\n".join(line.plain for line in long_lines([one, CELLS[1]], 80))
    assert "1 trial" in text.split("python-requests")[0] and "±0.0%" not in text
