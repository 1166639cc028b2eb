"""The bench server's binary follows its sources: built when missing or older than server/, left
alone when current."""

from __future__ import annotations

import shutil

import pytest

from clientlab import paths
from clientlab.servers import binary


@pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")
def test_a_missing_or_stale_server_is_built_and_a_current_one_is_left_alone(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CLIENTLAB_HOME", str(tmp_path))
    built = binary.current()
    assert built == paths.server_binary() and built.exists()
    assert (built.parent / ".server-stamp").read_text().strip() == binary.source_stamp()
    assert "is missing" in capsys.readouterr().err
    first = built.stat().st_mtime_ns
    assert binary.current() == built and built.stat().st_mtime_ns == first  # current: not built again
    assert capsys.readouterr().err == ""
    (built.parent / ".server-stamp").write_text("an older server's stamp\n")
    binary.current()
    assert "older than server/'s sources" in capsys.readouterr().err
    assert (built.parent / ".server-stamp").read_text().strip() == binary.source_stamp()
