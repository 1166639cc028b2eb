"""Numbers and values a scenario cannot take are refused when it loads, naming the field, before
they cost anything: an {index} expansion past 100,000 URLs, an endless or absurd timeout, an upload
the lab would have to write to disk, option values that are not JSON (a date), names that are not
option names."""

from __future__ import annotations

import time

import pytest

from clientlab import scenario
from clientlab.errors import LabInputError

# a refusal must come at once: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


def load(tmp_path, text: str):  # noqa: ANN201
    path = tmp_path / "s.toml"
    path.write_text('description = "x"\n' + text)
    return scenario.load_file(path)


def test_an_index_expansion_past_the_limit_is_refused_at_once(tmp_path):
    started = time.monotonic()
    with pytest.raises(LabInputError, match=r"requests\.0\.repeat.*100000000 distinct URLs from \{index\}: at most 100000"):
        load(tmp_path, '[params]\nn = 100000000\n[[requests]]\npath = "/feeds/{index}"\nrepeat = "{n}"\n')
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("value,match", [("1e9", "less than or equal to 86400"), ("0", "greater than 0"),
                                         ("-inf", "-inf is not a number")])
def test_a_timeout_must_be_finite_and_sensible(tmp_path, value, match):
    with pytest.raises(LabInputError, match=rf"field 'timeout_s': .*{match}"):
        load(tmp_path, f'timeout_s = {value}\n[[requests]]\npath = "/bytes/1"\n')


def test_an_upload_too_large_to_write_is_refused(tmp_path):
    with pytest.raises(LabInputError, match=r"requests\.0\.upload_size"):
        load(tmp_path, '[[requests]]\nmethod = "POST"\npath = "/echo"\nupload_size = 100000000000000\n')


@pytest.mark.parametrize("options,field", [("{ when = 1979-05-27 }", "client.options.when"),
                                           ('{ "Bad Name" = 1 }', "client.options"),
                                           ("{ nested = { a = 1 } }", "client.options.nested")])
def test_option_values_and_names_are_checked(tmp_path, options, field):
    with pytest.raises(LabInputError, match=rf"field '{field}"):
        load(tmp_path, f'[client]\noptions = {options}\n[[requests]]\npath = "/bytes/1"\n')


def test_a_declared_default_is_read_as_validated(tmp_path):
    f = load(tmp_path, 'default = false\n[[requests]]\npath = "/bytes/1"\n')
    assert f.default is False
    assert scenario.select([f], None, {}) == []
