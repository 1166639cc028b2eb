from pathlib import Path

import pytest

from clientlab import scenario
from clientlab.errors import LabInputError
from tests.support.fixtures import shipped


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def test_every_shipped_scenario_is_valid():
    files, problems = scenario.discover()
    assert problems == []
    names = {f.name for f in files}
    assert {"get-small", "get-json-335k", "post-form", "post-multipart", "redirect-get", "cookie-session",
            "download-memory", "download-file", "parallel-feeds"} <= names


def test_parameters_fill_paths_and_keep_integer_types():
    files, _ = scenario.discover()
    by_name = {f.name: f for f in files}
    s = by_name["download-file"].expand({"size": "1GB"})
    assert s.requests[0].path == "/bytes/1000000000"
    assert by_name["get-small"].expand({"count": 10}).requests[0].repeat == 10


def test_index_placeholder_expands_into_distinct_requests():
    files, _ = scenario.discover()
    feeds = {f.name: f for f in files}["parallel-feeds"].expand({"feeds": 5})
    assert [r.path for r in feeds.requests] == [f"/feeds/{i}" for i in range(5)]
    assert feeds.client.concurrency == 20


def test_bad_field_value_is_rejected_naming_file_and_field(tmp_path):
    path = write(tmp_path, "bad", 'description = "x"\n[[requests]]\nmethod = "GET"\npath = "/bytes/1"\nrepeat = -3\n')
    with pytest.raises(LabInputError) as info:
        scenario.load_file(path)
    assert str(path) in str(info.value) and "requests.0.repeat" in str(info.value)


def test_unknown_field_is_rejected_with_its_name(tmp_path):
    path = write(tmp_path, "typo", 'description = "x"\n[[requests]]\npath = "/bytes/1"\nrepaet = 3\n')
    with pytest.raises(LabInputError, match=r"requests\.0\.repaet.*unknown field"):
        scenario.load_file(path)


def test_unknown_parameter_placeholder_is_named(tmp_path):
    path = write(tmp_path, "p", 'description = "x"\n[[requests]]\npath = "/bytes/{sise}"\n')
    with pytest.raises(LabInputError, match=r"requests\.0\.path.*unknown parameter '\{sise\}'"):
        scenario.load_file(path)


def test_broken_toml_is_rejected_with_the_file_named(tmp_path):
    path = write(tmp_path, "broken", 'description = "x\n')
    with pytest.raises(LabInputError, match="broken.toml: cannot read scenario"):
        scenario.load_file(path)


def test_http2_without_tls_is_explained(tmp_path):
    path = write(tmp_path, "h2", 'description = "x"\n[client]\nhttp = "2"\n[[requests]]\npath = "/bytes/1"\n')
    with pytest.raises(LabInputError, match='client.*scheme = "https"'):
        scenario.load_file(path)


def test_discover_reports_bad_files_and_keeps_good_ones(tmp_path):
    write(tmp_path, "good", 'description = "x"\n[[requests]]\npath = "/bytes/1"\n')
    write(tmp_path, "bad", 'description = "x"\n[[requests]]\npath = "no-slash"\n')
    files, problems = scenario.discover(tmp_path)
    assert [f.name for f in files] == ["good"]
    assert len(problems) == 1 and "bad.toml" in problems[0] and "requests.0.path" in problems[0]


def test_overrides_for_one_scenario_or_all():
    files, _ = scenario.discover()
    overrides = scenario.parse_overrides(["count=7", "post-form.count=3"])
    chosen = scenario.select(files, ["get-small", "post-form"], overrides)
    assert [s.total_requests for s in chosen] == [7, 3]


def test_override_of_a_parameter_no_scenario_has_is_an_error():
    files, _ = scenario.discover()
    with pytest.raises(LabInputError, match="not a parameter"):
        scenario.select(files, ["get-small"], scenario.parse_overrides(["hops=2"]))


def test_unknown_scenario_name_lists_the_known_ones():
    files, _ = scenario.discover()
    with pytest.raises(LabInputError, match="unknown scenario.*get-small"):
        scenario.select(files, ["get-smal"], {})


def test_client_changes_from_the_command_line_are_validated_and_named():
    files, _ = scenario.discover()
    base = {f.name: f for f in files}["get-small"].expand()
    h2 = base.with_client(http="2", options=scenario.parse_options(["tcp_nodelay=false", "share=dns,tls"]))
    assert h2.client.scheme == "https" and h2.client.http == "2"
    assert h2.client.options == {"tcp_nodelay": False, "share": ["dns", "tls"]}
    assert h2.label == "get-small[http=2,tcp_nodelay=False,share=dns+tls]"
    assert base.with_client(http=None, options={}) is base
    with pytest.raises(LabInputError, match="get-small"):
        base.with_client(concurrency=0)


@pytest.mark.parametrize("path", ["//203.0.113.9/bytes/1", "/redirect/1?to=http://203.0.113.9/",
                                  "/redirect/1?to=http%3A%2F%2F203.0.113.9%2F"])
def test_a_target_other_than_the_lab_server_is_refused(tmp_path, path):
    f = write(tmp_path, "away", f'description = "x"\n[[requests]]\npath = "{path}"\n')
    with pytest.raises(LabInputError, match=r"requests\.0\.path.*lab's own server"):
        scenario.load_file(f)


@pytest.mark.parametrize("name,params", [("cookie-session", {}), ("download-file", {"count": 3})])
def test_work_that_needs_order_refuses_concurrency(name, params):
    sc = shipped(name, **params)
    with pytest.raises(LabInputError, match="concurrency must be 1"):
        sc.with_client(concurrency=4)


def test_a_value_the_scenario_cannot_take_is_blamed_on_the_parameter_given_not_the_file():
    files, _ = scenario.discover()
    with pytest.raises(LabInputError, match=r"^scenario get-small \(.*get-small.toml\) cannot take count=abc for its parameter 'count' "
                                            r"\(.*valid integer.*its default is 2000\)$"):
        scenario.select(files, ["get-small"], scenario.parse_overrides(["count=abc"]))


def test_a_misspelt_scenario_or_parameter_gets_the_nearest_name():
    files, _ = scenario.discover()
    with pytest.raises(LabInputError, match=r"unknown scenario\(s\): get-smal \(did you mean get-small\?\)"):
        scenario.select(files, ["get-smal"], {})
    with pytest.raises(LabInputError, match=r"parameter 'cuont' .* \(did you mean count\?\) \(they have: count, size\)"):
        scenario.select(files, ["get-small"], scenario.parse_overrides(["cuont=5"]))
