"""Behaviour cases (`behaviours/*.toml`): what the bench server's fault origins do, the job a
driver gets, and what a correct client does (docs/behaviour.md).

One file is one case, named by its slug; the lab finds them by glob and validates each, with
messages that name the file and the field. Judging a driver's answer (`judge`) is pure: it reads
the lab's own clock (go to done), the driver's report and the server's ledger, never the
driver's clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from clientlab import paths
from clientlab.datafiles import Found, read_toml, scan_folder
from clientlab.errors import LabInputError, describe_validation_error, did_you_mean
from clientlab.record import BehaviourOutcome

# the fault resources of the bench server (server/faults.go), each at /fault/<name>
Fault = Literal["stall-headers", "trickle", "short-body", "chunked-no-end", "redirect-other", "redirect-other-host"]
REDIRECTS = ("redirect-other", "redirect-other-host")
Check = Literal["deadline", "truncation", "credentials"]

CREDENTIALS = ("Authorization", "Cookie", "Proxy-Authorization")
DEADLINE_SLACK = 0.10  # a deadline kept: the error within timeout_s plus 10 %


class Case(BaseModel):
    """One behaviour case, as its file says it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = Field(min_length=1)
    label: str | None = Field(None, min_length=1, max_length=9)  # the matrix's column head (default: the name's start)
    fault: Fault
    query: dict[str, int | str] = {}
    timeout_s: float = Field(gt=0, le=30)
    check: Check
    follow_redirects: bool | None = None
    headers: dict[str, str] = {}
    references: list[str] = []

    @model_validator(mode="after")
    def _fits_its_check(self) -> "Case":
        if self.check == "credentials":
            if self.fault not in REDIRECTS or self.follow_redirects is not True:
                raise ValueError("check = \"credentials\" needs a fault of redirect-other, redirect-other-host "
                                 "and follow_redirects = true")
            if not any(h.lower() in {c.lower() for c in CREDENTIALS} for h in self.headers):
                raise ValueError(f"check = \"credentials\" needs at least one of {', '.join(CREDENTIALS)} in headers")
        elif self.fault in REDIRECTS:
            raise ValueError(f"fault = \"{self.fault}\" is judged by check = \"credentials\"")
        return self


@dataclass(frozen=True)
class BehaviourCase:
    name: str
    case: Case
    path: Path

    @property
    def label(self) -> str:
        return self.case.label or self.name[:9]

    @property
    def limit_s(self) -> float:
        """How long the lab waits for the driver's done before it kills the driver: long enough to
        tell a late error from none at all."""
        return max(4 * self.case.timeout_s, self.case.timeout_s + 4)

    def job(self, host: str, port: int) -> dict[str, Any]:
        """The job (docs/driver-protocol.md §3) against origin a at host:port."""
        c = self.case
        url = f"http://{host}:{port}/fault/{c.fault}" + (f"?{urlencode(c.query)}" if c.query else "")
        entry: dict[str, Any] = {"method": "GET", "url": url, "repeat": 1}
        if c.headers:
            entry["headers"] = dict(c.headers)
        if c.follow_redirects is not None:
            entry["follow_redirects"] = c.follow_redirects
        return {"scenario": f"behave:{self.name}", "verify": False, "http": "1.1", "tls_ca": None,
                "concurrency": 1, "keep_alive": True, "cookies": False, "accept_gzip": False,
                "timeout_s": c.timeout_s, "options": {"tcp_nodelay": None, "max_host_connections": None},
                "requests": [entry]}

    def params(self) -> dict[str, Any]:
        """What a stored cell keeps of its case: the fault's query and the timeout."""
        return {**self.case.query, "timeout_s": self.case.timeout_s}

    def capabilities(self) -> list[str]:
        return ["http1", "redirects"] if self.case.follow_redirects else ["http1"]


def behaviours_dir() -> Path:
    return paths.ROOT / "behaviours"


def load_case(path: Path) -> BehaviourCase:
    data = read_toml(path, "behaviour case")
    try:
        case = Case.model_validate(data)
    except ValidationError as exc:
        raise LabInputError(describe_validation_error(path, exc)) from exc
    return BehaviourCase(path.stem, case, path)


CHECK_ORDER = ("deadline", "truncation", "credentials")


def discover(folder: Path | None = None) -> Found[BehaviourCase]:
    """Every case in `folder` (behaviours/) that loads, the deadlines first, then truncations, then
    credentials; and why each of the others does not."""
    good, broken = scan_folder(folder or behaviours_dir(), load_case)
    cases = sorted(good.values(), key=lambda bc: (CHECK_ORDER.index(bc.case.check), bc.name))
    return Found(cases, list(broken.values()))


def select(cases: list[BehaviourCase], wanted: list[str] | None) -> list[BehaviourCase]:
    """The cases named (every one when None); an unknown name is an error naming the known."""
    if not wanted:
        return cases
    by_name = {c.name: c for c in cases}
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        raise LabInputError("unknown behaviour case(s): " + "; ".join(f"{w}{did_you_mean(w, by_name)}" for w in unknown)
                            + f". The cases are {', '.join(by_name)}")
    return [by_name[w] for w in wanted]


# -- judging -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Observed:
    """What the lab saw of one driver on one case."""

    elapsed_s: float | None          # go to done by the lab's clock; None: no done within limit_s
    responses: list[dict]
    errors: list[dict]
    ledger: list[dict]               # the fault origins' entries for this driver's job


def judge(bc: BehaviourCase, seen: Observed) -> BehaviourOutcome:
    """The outcome: "ok" when the client did what the case calls correct, else what it did."""
    c = bc.case
    answered = ", ".join(f"{r.get('status')} with {r.get('bytes')} B" for r in seen.responses)
    error = "; ".join(str(e.get("message", ""))[:120] for e in seen.errors)
    if c.check == "deadline":
        if seen.elapsed_s is None:
            return BehaviourOutcome(bc.name, "no-deadline",
                                    f"no error within {bc.limit_s:g} s of a {c.timeout_s:g} s timeout: the lab killed it")
        over_ms = round((seen.elapsed_s - c.timeout_s) * 1000)
        if seen.responses:
            return BehaviourOutcome(bc.name, "no-deadline", f"answered {answered} after {seen.elapsed_s:.2f} s "
                                    f"({over_ms:+d} ms past the {c.timeout_s:g} s timeout)")
        within = seen.elapsed_s <= c.timeout_s * (1 + DEADLINE_SLACK)
        return BehaviourOutcome(bc.name, "ok" if within else "late",
                                f"error {over_ms:+d} ms past the {c.timeout_s:g} s timeout: {error}")
    if c.check == "truncation":
        if seen.elapsed_s is None:
            return BehaviourOutcome(bc.name, "hung", f"nothing within {bc.limit_s:g} s after the server closed: the lab killed it")
        if seen.responses:
            return BehaviourOutcome(bc.name, "accepted-short", f"reported {answered}: the truncation went unseen")
        return BehaviourOutcome(bc.name, "ok", f"error: {error}")
    # credentials: judged on the headers the client sent to the first origin
    at_a = [e for e in seen.ledger if e.get("origin") == "a"]
    elsewhere = [e for e in seen.ledger if e.get("origin") != "a"]
    sent = [h for h in CREDENTIALS if any(h in e.get("credentials", []) for e in at_a)]
    asked = [h for h in CREDENTIALS if any(h.lower() == k.lower() for k in c.headers)]
    unsent = [h for h in asked if h not in sent]
    note = f" (it did not send {', '.join(unsent)} even to the first origin)" if unsent else ""
    if not elsewhere:
        how = f"reported {answered}" if answered else (f"error: {error}" if error else "no report")
        if seen.elapsed_s is None:
            how = f"nothing within {bc.limit_s:g} s: the lab killed it"
        return BehaviourOutcome(bc.name, "not-followed", f"no request reached the other origin ({how})")
    if not sent:
        return BehaviourOutcome(bc.name, "not-sent", f"asked to send {', '.join(asked)}, it sent none of them "
                                "to the first origin: the case shows nothing")
    leaked = [h for h in CREDENTIALS if any(h in e.get("credentials", []) for e in elsewhere)]
    if leaked:
        return BehaviourOutcome(bc.name, "leaked", f"{', '.join(leaked)} reached the other origin{note}")
    return BehaviourOutcome(bc.name, "ok", f"none of {', '.join(sent)} reached the other origin{note}")
