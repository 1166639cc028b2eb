from pathlib import Path

import pytest

from clientlab.drivers import build as builder
from clientlab.drivers import manifest
from clientlab.errors import LabInputError
from tests.support import TESTDRIVERS


def write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "driver.toml").write_text(text)
    return folder


GOOD = '''id = "python-mine"
language = "python"
library = "mine"
description = "my own client"
run = ["{here}/run.sh"]
capabilities = ["tls"]
'''


def test_driver_folder_outside_the_repo_is_found(tmp_path):
    folder = write(tmp_path / "mine", GOOD)
    drivers, problems = manifest.discover([folder])
    assert "python-mine" in [d.id for d in drivers]
    mine = next(d for d in drivers if d.id == "python-mine")
    assert mine.argv == [f"{folder.resolve()}/run.sh"]
    assert "does not exist" in builder.missing(mine)


def test_bad_capability_is_rejected_naming_file_and_field(tmp_path):
    folder = write(tmp_path / "bad", GOOD.replace('["tls"]', '["tls", "telepathy"]'))
    with pytest.raises(LabInputError) as info:
        manifest.load_manifest(folder / "driver.toml")
    assert "driver.toml" in str(info.value) and "capabilities.1" in str(info.value)


def test_id_must_start_with_the_language(tmp_path):
    folder = write(tmp_path / "bad", GOOD.replace('id = "python-mine"', 'id = "perl-mine"'))
    with pytest.raises(LabInputError, match="field 'id'.*must start with the language"):
        manifest.load_manifest(folder / "driver.toml")


def test_broken_manifest_is_reported_and_others_still_load(tmp_path):
    write(tmp_path / "a", GOOD)
    write(tmp_path / "b", "id = ")
    drivers, problems = manifest.discover([tmp_path])
    assert "python-mine" in [d.id for d in drivers]
    assert any("b/driver.toml" in p for p in problems)


def test_an_unknown_driver_name_is_an_error_that_suggests_the_nearest_and_where_to_look():
    drivers, _ = manifest.discover([TESTDRIVERS])
    with pytest.raises(LabInputError, match=r"unknown driver\(s\): python-fake-refrence \(did you mean "
                                            r"python-fake-reference\?\)\. `clientlab drivers` lists the \d+"):
        manifest.select(drivers, ["python-fake-refrence"])
    with pytest.raises(LabInputError, match=r"unknown driver\(s\): zzz\. "):
        manifest.select(drivers, ["zzz"])  # nothing near: no guess


def test_all_and_globs_choose_drivers_in_the_order_found_each_once():
    drivers, _ = manifest.discover([TESTDRIVERS])
    found = [d.id for d in drivers]
    assert [d.id for d in manifest.select(drivers, ["all"])] == found
    recommends = [i for i in found if i.startswith("python-fake-recommends-")]
    assert len(recommends) == 2
    assert [d.id for d in manifest.select(drivers, ["python-fake-recommends-*"])] == recommends
    # a name given twice (by its id and by a glob) is chosen once, where it was named first
    chosen = [d.id for d in manifest.select(drivers, ["python-fake-reference", "python-fake-re*"])]
    assert chosen[0] == "python-fake-reference" and len(chosen) == len(set(chosen))
    assert set(chosen) == {i for i in found if i.startswith("python-fake-re")}


def test_a_glob_that_matches_no_driver_is_an_error_naming_it():
    drivers, _ = manifest.discover([TESTDRIVERS])
    with pytest.raises(LabInputError, match=r"unknown driver\(s\): zzz-\* \(a pattern that matches no driver\)"):
        manifest.select(drivers, ["python-fake-reference", "zzz-*"])


def test_only_ids_name_each_driver():
    assert manifest.names_each(["python-requests", "c-libcurl"])
    assert not manifest.names_each(None)
    assert not manifest.names_each(["all"])
    assert not manifest.names_each(["python-requests", "go-*"])


def test_test_drivers_stay_out_of_default_runs():
    drivers, _ = manifest.discover([TESTDRIVERS])
    assert not any(d.id.startswith("python-fake") for d in manifest.select(drivers, None))


def test_an_id_not_naming_its_language_is_refused_with_the_value_quoted_on_one_line(tmp_path):
    folder = write(tmp_path / "bad", GOOD.replace('language = "python"', 'language = "py\\nthon"'))
    with pytest.raises(LabInputError) as info:
        manifest.load_manifest(folder / "driver.toml")
    message = str(info.value)
    assert "must start with the language, e.g. 'py\\nthon-mine'" in message and "\n" not in message


def test_http1_is_implied_unless_a_driver_speaks_http3_alone(tmp_path):
    usual = manifest.load_manifest(write(tmp_path / "usual", GOOD) / "driver.toml").manifest
    assert usual.capabilities == ["http1", "tls"]
    alone = GOOD.replace('["tls"]', '["tls", "http3"]') + "http1 = false\n"
    only3 = manifest.load_manifest(write(tmp_path / "only3", alone) / "driver.toml").manifest
    assert "http1" not in only3.capabilities


def test_claiming_http1_and_saying_http1_false_is_refused(tmp_path):
    both = GOOD.replace('["tls"]', '["tls", "http1"]') + "http1 = false\n"
    with pytest.raises(LabInputError, match="claims http1, and http1 = false"):
        manifest.load_manifest(write(tmp_path / "both", both) / "driver.toml")
