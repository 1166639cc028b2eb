"""The driver contract's one schema (drivers/contract/schema.toml) against what the lab builds and
reads: the jobs of every shipped scenario and behaviour case, the docs' tables, and the golden
transcript's messages (drivers/contract/transcript.json). The helpers of each language run the
transcript in their own test runners; this is the lab's side of the same names."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from clientlab import scenario
from clientlab.behaviour import cases as behaviour
from clientlab.drivers import verify
from clientlab.drivers.job import PROTOCOL_VERSION, Expectation, PlannedJob, plan
from clientlab.servers.side import Endpoint

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "drivers" / "contract"
SCHEMA = tomllib.loads((CONTRACT / "schema.toml").read_text())
TRANSCRIPT = json.loads((CONTRACT / "transcript.json").read_text())
ENDPOINT = Endpoint("127.0.0.1", 8080, 8443, Path("/nonexistent/ca.pem"), h3_port=8443)
PATTERN = re.compile(r"<(any string|any number|text with: .*)>")
SCALARS = {"string": (str,), "bool": (bool,), "integer": (int,), "number": (int, float)}


def problems(value: Any, kind: str, where: str) -> list[str]:
    """How `value` departs from the schema's `kind` (a type name or a table), [] when it conforms.
    A transcript pattern (<any number>…) stands for a value of any type."""
    if isinstance(value, str) and PATTERN.fullmatch(value):
        return []
    if kind in SCALARS:
        # bool is an int in Python, and never an integer or a number on the wire
        ok = isinstance(value, SCALARS[kind]) and (kind == "bool" or not isinstance(value, bool))
        return [] if ok else [f"{where}: {json.dumps(value)} is not a {kind}"]
    if kind == "object of strings":
        if not isinstance(value, dict):
            return [f"{where}: {json.dumps(value)} is not an object"]
        return [p for k, v in value.items() for p in problems(v, "string", f"{where}.{k}")]
    if kind.startswith("list of "):
        if not isinstance(value, list):
            return [f"{where}: {json.dumps(value)} is not a list"]
        return [p for i, item in enumerate(value) for p in problems(item, kind.removeprefix("list of "), f"{where}[{i}]")]
    return table_problems(value, SCHEMA[kind], where)


def table_problems(value: Any, table: dict[str, dict], where: str, options: bool = False) -> list[str]:
    """How an object departs from a schema table: unknown or missing fields, types, values."""
    if not isinstance(value, dict):
        return [f"{where}: {json.dumps(value)} is not an object"]
    found = [f"{where}: unknown field {name!r}" for name in value if name not in table]
    for name, field in table.items():
        if name not in value:
            found += [f"{where}: no {name!r}"] if field.get("required") else []
            continue
        got = value[name]
        if got is None:
            found += [] if field.get("null") else [f"{where}.{name}: null"]
            continue
        wrong = problems(got, field["type"], f"{where}.{name}")
        items = got if isinstance(got, list) else [got]
        if not wrong and "values" in field:
            wrong = [f"{where}.{name}: {json.dumps(v)} is not one of {field['values']}" for v in items
                     if v not in field["values"] and not (isinstance(v, str) and PATTERN.fullmatch(v))]
        if not wrong and "min" in field and isinstance(got, (int, float)) and got < field["min"]:
            wrong = [f"{where}.{name}: {got} is below {field['min']}"]
        found += wrong
    return found


def message_problems(message: Any, sender: str, where: str) -> list[str]:
    """How a protocol message departs from the schema's `lab.*` or `driver.*` table of its type."""
    if not isinstance(message, dict) or message.get("type") not in SCHEMA[sender]:
        return [f"{where}: not a {sender} message: {json.dumps(message)[:80]}"]
    body = {k: v for k, v in message.items() if k != "type"}
    return table_problems(body, SCHEMA[sender][message["type"]], f"{where} ({message['type']})")


SCENARIOS = scenario.discover()[0]


@pytest.mark.parametrize("file", SCENARIOS, ids=[f.name for f in SCENARIOS])
@pytest.mark.parametrize("verify_pass", [True, False], ids=["verify", "timed"])
def test_every_shipped_scenario_plans_a_job_the_schema_describes(file, verify_pass, tmp_path):
    planned = plan(file.expand(None), ENDPOINT, tmp_path, verify=verify_pass, tag="t")
    assert problems(planned.job, "job", file.name) == []
    assert message_problems({"type": "job", "job": planned.job}, "lab", file.name) == []


class EveryOrigin(dict):
    """The bench server's listening ports as a behaviour case reads them: every fault origin it
    may name, on one port (the jobs' shape is what is checked here, not where they go)."""

    def __init__(self) -> None:
        super().__init__(fault_a=9)

    def get(self, key, default=None):
        return 9

    def __getitem__(self, key):
        return 9


def test_every_behaviour_case_sends_a_job_the_schema_describes():
    found = behaviour.discover()[0]
    assert found, "no behaviour case loaded"
    for bc in found:
        assert problems(bc.job("127.0.0.1", 9, EveryOrigin(), "/ca.pem"), "job", bc.name) == []


def test_a_job_with_an_option_the_schema_does_not_know_is_not_the_schemas():
    planned = plan(SCENARIOS[0].expand(None), ENDPOINT, Path("/tmp"), verify=False, tag="t")
    job = {**planned.job, "options": {"tcp_nodelay": 1, "brand_new": True}}
    assert problems(job, "job", "j") == ["j.options: unknown field 'brand_new'", "j.options.tcp_nodelay: 1 is not a bool"]


def _table_names(section: str, first_column: str) -> set[str]:
    """The names in the first column of the docs' table that follows `first_column`'s header row."""
    text = (ROOT / "docs" / "driver-protocol.md").read_text()
    part = text.split(section, 1)[1]
    table = part.split(f"| {first_column} |", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^\| `([a-z0-9_]+)` \|", table, re.M))


def test_the_docs_list_the_schemas_options_and_request_fields():
    assert _table_names("## 3. The job", "option") == set(SCHEMA["options"])
    assert _table_names("## 3. The job", "field") == set(SCHEMA["job"])
    assert _table_names("A request entry:", "field") == set(SCHEMA["request"])


def test_the_docs_example_job_is_the_schemas():
    text = (ROOT / "docs" / "driver-protocol.md").read_text().split("## 3. The job", 1)[1]
    example = json.loads(text.split("```json", 1)[1].split("```", 1)[0])
    assert problems(example, "job", "docs §3") == []
    assert set(example) == set(SCHEMA["job"])


def test_the_transcript_speaks_the_labs_protocol_version():
    assert SCHEMA["protocol"] == PROTOCOL_VERSION
    hellos = [m for case in TRANSCRIPT["cases"] for m in case["lab"] + case["driver"]
              if isinstance(m, dict) and m.get("type") == "hello"]
    assert hellos and {m["protocol"] for m in hellos} == {PROTOCOL_VERSION}


@pytest.mark.parametrize("case", TRANSCRIPT["cases"], ids=[c["name"] for c in TRANSCRIPT["cases"]])
def test_every_transcript_message_is_the_schemas(case):
    sent = [p for i, m in enumerate(case["lab"]) for p in message_problems(m, "lab", f"lab line {i}")]
    answered = [p for i, m in enumerate(case["driver"]) for p in message_problems(m, "driver", f"driver line {i}")]
    assert answered == []
    if "outside_schema" in case:  # a case that checks a refusal sends what the lab never does
        assert sent, f"{case['name']} is marked outside_schema ({case['outside_schema']}) and keeps to it"
    else:
        assert sent == []


def test_the_labs_report_check_takes_the_transcripts_report():
    case = next(c for c in TRANSCRIPT["cases"] if c["name"] == "a-verified-job-reports-every-response-with-its-digest")
    job, report = case["lab"][0]["job"], case["driver"][-1]
    expect = [Expectation(repeat=e["repeat"], status=404 if "/status/404" in e["url"] else 200, final_path="/",
                          redirect_hops=0, form_kind=None, form_sha256=None, upload_size=None, sink_path=None,
                          gzip_asked=False) for e in job["requests"]]
    planned = PlannedJob(job=job, expectations=expect)
    snapshot = {"requests": 3, "versions": {"HTTP/1.1": 3}, "connections": 1}
    assert verify.check_trial(planned, report, snapshot) == []
    # and the check reads the fields the schema names: a report under other names fails it
    renamed = {**report, "responses": [{("code" if k == "status" else k): v for k, v in item.items()}
                                       for item in report["responses"]]}
    assert verify.check_trial(planned, renamed, snapshot)
