"""Bad input never ends in a traceback: a broken scenario file is reported and the others run;
a -p value that would change a URL's path, a nasty -p / -o value, markup in a user's file are
refused or printed as text, with exit code 2 where the input cannot be used."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import QUICK, lab  # noqa: F401 - the fixture


def no_traceback(proc) -> None:  # noqa: ANN001
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr


@pytest.fixture
def broken_folder(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "latin.toml").write_bytes('description = "caf\xe9"\n'.encode("latin-1"))
    (folder / "garbage.toml").write_bytes(bytes(range(256)))
    (folder / "deep.toml").write_text("a = " + "[" * 10_000 + "]" * 10_000)
    (folder / "dir.toml").mkdir()
    (folder / "markup.toml").write_text('description = "[/] [bold]odd[/bold] [seed 003]"\n'
                                        '[[requests]]\npath = "/bytes/16"\n')
    return folder


def test_broken_files_are_reported_and_the_others_still_list_and_run(lab, broken_folder):
    listed = lab.run("scenarios", "--scenario-path", str(broken_folder))
    no_traceback(listed)
    assert listed.returncode == 0
    for name in ("latin.toml", "garbage.toml", "deep.toml", "dir.toml"):
        assert name in listed.stderr
    assert "not UTF-8" in listed.stderr and "nested more than" in listed.stderr and "a folder" in listed.stderr
    assert "get-small" in listed.stdout and "[/] [bold]odd[/bold] [seed 003]" in listed.stdout
    run = lab.run("run", *QUICK, "--scenario-path", str(broken_folder), "-s", "get-small,markup", "--format", "json")
    no_traceback(run)
    assert run.returncode == 0, run.stderr
    assert "invalid scenario, skipped" in run.stderr
    assert {c["status"] for c in json.loads(run.stdout)["cells"]} == {"ok"}


def test_a_parameter_that_would_inject_into_a_path_is_refused(lab):
    proc = lab.run("run", *QUICK, "-s", "redirect-get", "-p", "hops=1?to=//example.com/x#")
    no_traceback(proc)
    assert proc.returncode == 2
    assert "parameter 'hops' = '1?to=//example.com/x#' would put '?' into the path" in " ".join(proc.stderr.split())
    assert not lab.db.exists() or "redirect" not in lab.db.read_bytes().decode("latin-1")  # nothing ran


@pytest.mark.parametrize("args", [["-p", "count=[/]"], ["-p", "count=\x1b[2J"], ["-p", "=5"], ["-p", "count"],
                                  ["-p", "get-small.=1"], ["-p", "count=" + "9" * 5000], ["-p", "size=" + "9" * 400],
                                  ["-o", "[/]=1"], ["-o", "tcp_nodelay=\x07"], ["-o", "x"], ["-p", "nope.count=1"]])
def test_nasty_parameter_and_option_values_exit_2_with_a_message(lab, args):
    proc = lab.run("run", *QUICK, "-s", "get-small", *args)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and "\x1b[2J" not in proc.stderr


def test_an_unknown_http_version_exits_2_naming_the_known_ones(lab):
    proc = lab.run("run", *QUICK, "-s", "get-small", "--http", "2,4")
    no_traceback(proc)
    assert proc.returncode == 2
    assert "'4': the versions are 1.1, 2, h2c, 3" in proc.stderr
