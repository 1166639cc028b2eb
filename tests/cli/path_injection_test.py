"""Paths are checked after parameters are filled in: a parameter value cannot add a segment, a
query, a fragment, an escape or another host to a URL unless the scenario declares it a path
({name:path}), and every URL the lab builds stays on its own server however a client reads it."""

from __future__ import annotations

import pytest

from clientlab import scenario
from clientlab.drivers.job import same_origin_url
from clientlab.errors import LabInputError
from tests.support.fixtures import shipped


def test_the_issues_redirect_injection_is_refused_naming_parameter_and_character():
    with pytest.raises(LabInputError) as info:
        shipped("redirect-get", hops="1?to=//example.com/x#")
    message = str(info.value)
    # blamed on the value given, with the field it would have gone into
    assert message.startswith("scenario redirect-get (")
    assert "redirect-get.toml) cannot take hops=1?to=//example.com/x# for its parameter 'hops'" in message
    assert "field 'requests.0.path'" in message
    assert "parameter 'hops' = '1?to=//example.com/x#' would put '?' into the path" in message


@pytest.mark.parametrize("value,char", [("1?x", "'?'"), ("1#x", "'#'"), ("a/b", "'/'"), ("a\\b", "'\\\\'"),
                                        ("%2F", "'%'"), ("1\r\nX: y", "'\\r'"), ("a b", "' '"), ("..", "a dot segment"),
                                        ("é", "'é'"), ("1&to=//x", "'&'")])
def test_a_plain_parameter_cannot_put_separators_escapes_or_controls_into_a_path(value, char):
    with pytest.raises(LabInputError, match="would put " + __import__("re").escape(char) + " into the path"):
        shipped("redirect-get", hops=value)


def test_ordinary_values_still_fill_paths():
    assert shipped("redirect-get", hops=2, size="2KiB").requests[0].path == "/redirect/2?to=/bytes/2048"
    assert shipped("parallel-feeds", feeds=3).requests[2].path == "/feeds/2"


@pytest.fixture
def takes_a_path(tmp_path) -> scenario.ScenarioFile:
    path = tmp_path / "hop.toml"
    path.write_text('description = "x"\n[params]\ntarget = "/bytes/10"\n'
                    '[[requests]]\npath = "/redirect/1?to={target:path}"\nfollow_redirects = true\n')
    return scenario.load_file(path)


def test_a_parameter_declared_a_path_takes_a_same_origin_path(takes_a_path):
    assert takes_a_path.expand({"target": "/json/100?seed=3"}).requests[0].path == "/redirect/1?to=/json/100?seed=3"


@pytest.mark.parametrize("value,why", [("//example.com/x", "starts with '//'"), ("/\\example.com", "backslash"),
                                       ("http://203.0.113.9/", "must start with '/'"), ("/x#frag", "fragment"),
                                       ("/%2F%2Fexample.com", "absolute URL|'//'"),
                                       ("/redirect/1?to=%2F%2Fexample.com", "once decoded, starts with '//'"),
                                       ("/a\tb", "printable ASCII")])
def test_a_parameter_declared_a_path_cannot_leave_the_lab_server(takes_a_path, value, why):
    with pytest.raises(LabInputError, match=why):
        takes_a_path.expand({"target": value})


@pytest.mark.parametrize("path", ["/redirect/1?to=/%5Cexample.com/x", "/redirect/1?to=%2F%2Fexample.com",
                                  "/redirect/1?to=%5C%5Cexample.com", "/redirect/2?to=/redirect/1%3Fto%3D%252F%252Fe",
                                  "/redirect/1?to=%09//example.com", "/redirect/1?to=https:%2F%2Fexample.com",
                                  "/bytes/1#", "/bytes/{x}", "/bytes/1 2", "/x%zz"])
def test_a_written_path_that_a_client_could_read_as_another_host_is_refused(tmp_path, path):
    f = tmp_path / "away.toml"
    f.write_text(f'description = "x"\n[[requests]]\npath = "{path}"\n'.replace("\\", "\\\\"))
    with pytest.raises(LabInputError, match=r"requests\.0\.path"):
        scenario.load_file(f)


def test_a_parameter_cannot_inject_a_header_line(tmp_path):
    f = tmp_path / "h.toml"
    f.write_text('description = "x"\n[params]\ntrace = "1"\n'
                 '[[requests]]\npath = "/bytes/1"\nheaders = { "X-Trace" = "{trace}" }\n')
    sc = scenario.load_file(f)
    with pytest.raises(LabInputError, match=r"headers.*control character or line break"):
        sc.expand({"trace": "1\r\nHost: example.com"})


@pytest.mark.parametrize("path", ["//example.com/x", "/\\example.com", "@example.com/x", ":80@example.com/x"])
def test_every_built_url_is_checked_to_stay_on_the_lab_server(path):
    with pytest.raises(LabInputError, match="would leave the lab's server http://127.0.0.1:4000"):
        same_origin_url("http://127.0.0.1:4000", path)
    assert same_origin_url("http://127.0.0.1:4000", "/bytes/1?to=/x") == "http://127.0.0.1:4000/bytes/1?to=/x"
