"""The golden transcript (drivers/contract/transcript.json) through the Python helper's message
loop, with the transcript's contract client behind each of its seams (Driver, AsyncDriver)."""

from __future__ import annotations

import io
import json
import re
import tomllib
from pathlib import Path

import labdriver
import pytest

CONTRACT = Path(__file__).resolve().parents[2] / "contract"
TRANSCRIPT = json.loads((CONTRACT / "transcript.json").read_text())
SCHEMA = tomllib.loads((CONTRACT / "schema.toml").read_text())


def answer(req: labdriver.Request, verify: bool) -> labdriver.Response:
    """The contract client's answer to one request (the transcript's `client`)."""
    if "/fail" in req.url:
        raise ConnectionRefusedError("connection refused")
    status = re.search(r"/status/(\d{3})", req.url)
    return labdriver.Response.of(int(status[1]) if status else 200, 11, req.url.encode(), verify)


def build(job: labdriver.Job) -> None:
    if job.scenario == "open-fails":
        raise OSError("the contract client cannot be built")


class ContractClient(labdriver.Driver):
    options = {"tcp_nodelay": None, "expect_100": (False,)}

    def versions(self):
        return {**labdriver.base_versions(), "contract": "1"}

    def refuse(self, job):
        return "the contract client refuses this job" if job.scenario == "refused-by-client" else None

    def open(self, job):
        build(job)
        self.verify = job.verify

    def request(self, req):
        return answer(req, self.verify)


class AsyncContractClient(labdriver.AsyncDriver):
    options, versions, refuse = ContractClient.options, ContractClient.versions, ContractClient.refuse

    async def open(self, job):
        build(job)
        self.verify = job.verify

    async def request(self, req):
        return answer(req, self.verify)


def matches(want, got) -> bool:
    """The transcript's comparison: equal JSON, where a <...> string in `want` is a pattern."""
    if isinstance(want, str) and want.startswith("<") and want.endswith(">"):
        if want == "<any string>":
            return isinstance(got, str)
        if want == "<any number>":
            return isinstance(got, (int, float)) and not isinstance(got, bool) and got >= 0
        if want.startswith("<text with: "):
            return isinstance(got, str) and want[len("<text with: "):-1] in got
    if isinstance(want, dict):
        rest = want.get("<more>")
        return (isinstance(got, dict) and all(k in got and matches(v, got[k]) for k, v in want.items() if k != "<more>")
                and all(k in want or (rest is not None and matches(rest, v)) for k, v in got.items()))
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(matches, want, got))
    return type(want) is type(got) and want == got


def run(driver: labdriver.Driver, lab: list) -> list:
    lines = "".join((m if isinstance(m, str) else json.dumps(m, separators=(",", ":"))) + "\n" for m in lab)
    out = io.StringIO()
    labdriver.Loop(driver, io.BytesIO(lines.encode()), out).run()
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("seam", [ContractClient, AsyncContractClient])
@pytest.mark.parametrize("case", TRANSCRIPT["cases"], ids=[c["name"] for c in TRANSCRIPT["cases"]])
def test_the_helper_answers_the_transcript(case, seam):
    driver = seam()
    try:
        got = run(driver, case["lab"])
    finally:
        if isinstance(driver, labdriver.AsyncDriver):
            driver.loop.close()
    assert matches(case["driver"], got), f"{case['about']}\nwant {case['driver']}\ngot  {got}"


def test_the_comparison_takes_patterns_and_nothing_else():
    assert matches({"a": "<text with: bad>", "<more>": "<any string>"}, {"a": "a bad job", "b": "x"})
    assert not matches({"a": 1}, {"a": 1, "b": "x"})
    assert not matches({"a": "<any number>"}, {"a": True})
    assert not matches([1, 2], [2, 1]) and not matches(1, 1.5) and not matches(True, 1)


def test_the_options_the_helper_checks_are_the_schemas():
    # an option the helper does not check is refused unless a driver honours it (a new option is)
    kinds = {bool: "bool", int: "integer", list: "list of string", str: "string"}
    assert set(labdriver.OPTION_TYPES) <= set(SCHEMA["options"])
    assert {name: kinds[kind] for name, kind in labdriver.OPTION_TYPES.items()} == {
        name: SCHEMA["options"][name]["type"] for name in labdriver.OPTION_TYPES}
