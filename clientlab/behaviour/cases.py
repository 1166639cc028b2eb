"""Behaviour cases (`behaviours/*.toml`): what the bench server's fault origins do, the job a
driver gets, and what a correct client does (docs/behaviour.md).

One file is one case, named by its slug; the lab finds them by glob and validates each, with
messages that name the file and the field. Judging a driver's answer (`judge`) is pure: it reads
the lab's own clock (go to done), the driver's report and the server's ledger, never the
driver's clock.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from clientlab import paths
from clientlab.datafiles import Found, read_toml, scan_folder
from clientlab.errors import LabError, LabInputError, describe_validation_error, did_you_mean
from clientlab.record import BehaviourOutcome

# the fault resources of the bench server (server/internal/faults/faults.go), each at /fault/<name>
Fault = Literal["stall-headers", "trickle", "short-body", "chunked-no-end", "redirect-other", "redirect-other-host",
                "keepalive-race", "connect-dark", "see-other", "redirect-to-plain", "gzip-bomb", "big-header",
                "many-headers", "h2-goaway", "h2-refused", "h2-max-streams", "gzip-truncated", "br-bomb",
                "tls-expired", "tls-wrong-name", "tls-untrusted", "tls-self-signed", "tls-stall",
                # the lab's, not the server's: origin a reached by a host name whose first address
                # never answers (clientlab/netlab/darkfirst.py); -v6: a dark IPv6 address and
                # origin a's IPv4 one, the resolver's RFC 6724 sort putting the IPv6 one first
                "dark-first", "dark-first-v6"]
REDIRECTS = ("redirect-other", "redirect-other-host", "redirect-to-plain")
Check = Literal["deadline", "truncation", "credentials", "retry", "see-other", "bomb", "headers", "streams", "certificate", "pool",
                "next-address"]
# where a fault is served, when not on origin a: (scheme, the listening line's key, the path)
ORIGINS = {"connect-dark": ("http", "fault_dark", "/fault/landing"),
           "dark-first": ("http", "fault_a", "/fault/landing"),
           "dark-first-v6": ("http", "fault_a", "/fault/landing"),
           "redirect-to-plain": ("https", "fault_s", "/fault/redirect-to-plain"),
           "h2-goaway": ("https", "fault_h2", "/fault/h2-goaway"),
           "h2-refused": ("https", "fault_h2", "/fault/h2-refused")}
H2_FAULTS = ("h2-goaway", "h2-refused", "h2-max-streams")
# the TLS origins of certificates a client must refuse (server/internal/faults/faults_tls.go), and the
# certificate's fault each is named for
CERTIFICATE_FAULTS = {"tls-expired": "expired", "tls-wrong-name": "wrong-name", "tls-untrusted": "untrusted",
                      "tls-self-signed": "self-signed"}
ORIGINS.update({fault: ("https", f"fault_{origin}", "/fault/landing") for fault, origin in CERTIFICATE_FAULTS.items()})
ORIGINS.update({"tls-stall": ("https", "fault_tls-stall", "/fault/landing"),
                "h2-max-streams": ("https", "fault_h2", "/fault/h2-max-streams"),
                # over https: fetch (the Fetch standard, undici) and browsers offer br only on a
                # secure connection, so a bomb on plain http would never reach them
                "br-bomb": ("https", "fault_s", "/fault/br-bomb")})
BOMBS = ("gzip-bomb", "br-bomb")
ENCODED = ("gzip-bomb", "br-bomb", "gzip-truncated")  # the answer is content-coded: the case says who asks (accept_encoding)
# who chooses the request's Accept-Encoding on an ENCODED fault: "gzip", the job (accept_gzip,
# "Accept-Encoding: gzip", the body decoded); "library", the library as it ships (the job's option
# accept_encoding = "library": the driver sets no Accept-Encoding and leaves decoding as it is)
Encoding = Literal["gzip", "library"]
# each check's fault, where it has one of its own
CHECK_FAULT = {"retry": ("keepalive-race",), "see-other": ("see-other",), "bomb": BOMBS,
               "certificate": tuple(CERTIFICATE_FAULTS), "next-address": ("dark-first", "dark-first-v6")}
HEADER_FAULTS = ("big-header", "many-headers")
MIB = 1 << 20


def bomb_bytes(mib: int) -> int:
    """The decoded size of the bench server's bomb of about `mib` MiB (server/internal/faults/faults_bomb.go):
    one zero, then copies of 258."""
    return 1 + 258 * ((mib * MIB - 1) // 258)


CREDENTIALS = ("Authorization", "Cookie", "Proxy-Authorization")
DEADLINE_SLACK = 0.10  # a deadline kept: the error within timeout_s plus 10 %
# the next address reached in time: RFC 8305 §5 bounds the wait before the next connection
# attempt (its Connection Attempt Delay) at 2 s, 250 ms by default
NEXT_ADDRESS_S = 2.0


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
    method: Literal["GET", "POST"] = "GET"
    form: dict[str, str] = {}        # the request's body, as urlencoded form fields (a POST's)
    # the request goes out on a kept connection: the job first GETs the fault (query n = 1), then
    # sends the case's request (n = 2) on the connection that GET left open
    reuse: bool = False
    # the driver runs in a control group capped at this much memory, whose peak the cell shows
    # (a client that takes a bomb into memory is ended by the cap, never the host)
    memory_cap_mib: int | None = Field(None, ge=64, le=4096)
    # this many GETs (n = 1 ... streams) at once over HTTP/2, on as few connections as the client uses
    streams: int = Field(0, ge=0, le=64)
    # how many of the job's requests are in flight at once, where fewer than all of them
    concurrency: int | None = Field(None, ge=1, le=64)
    # one slow origin beside a fast one (check = "pool"): this many GETs of the fault (n = 1 ...
    # slow) and then this many of origin c's /fault/landing (n = slow + 1 ...), all in flight at
    # once through one client
    slow: int = Field(0, ge=0, le=32)
    fast: int = Field(0, ge=0, le=32)
    # an ENCODED fault's Accept-Encoding: "gzip" (the default) or "library" (Encoding, above)
    accept_encoding: Encoding | None = None
    references: list[str] = []

    @model_validator(mode="after")
    def _fits_its_check(self) -> "Case":
        if self.form and self.method != "POST":
            raise ValueError("form needs method = \"POST\"")
        if self.accept_encoding is not None and self.fault not in ENCODED:
            raise ValueError(f"accept_encoding goes with a content-coded fault ({', '.join(ENCODED)}), and only with it")
        for check, faults in CHECK_FAULT.items():
            if (self.check == check) != (self.fault in faults):
                named = " or ".join(f'"{f}"' for f in faults)
                raise ValueError(f"check = \"{check}\" goes with fault = {named}, and only with it")
        if self.check == "retry" and not self.reuse:
            raise ValueError("check = \"retry\" needs reuse = true: the race is on a kept connection")
        if self.check == "see-other" and (self.method != "POST" or not self.form or self.follow_redirects is not True):
            raise ValueError("check = \"see-other\" needs method = \"POST\", a form and follow_redirects = true")
        if (self.check == "headers") != (self.fault in HEADER_FAULTS):
            raise ValueError(f"check = \"headers\" goes with a fault of {', '.join(HEADER_FAULTS)}, and only with it")
        if self.check in ("bomb", "headers") and self.memory_cap_mib is None:
            raise ValueError(f"check = \"{self.check}\" needs memory_cap_mib: the driver's memory is capped and measured")
        if self.check == "bomb" and bomb_bytes(int(self.query.get("mib", 1024))) <= (self.memory_cap_mib or 0) * MIB:
            raise ValueError("a bomb's decoded size (query mib) must exceed memory_cap_mib: the cap tells a client "
                             "that holds it all")
        if (self.check == "streams") != (self.fault in H2_FAULTS) or (self.check == "streams") != (self.streams >= 2):
            raise ValueError(f"check = \"streams\" goes with a fault of {', '.join(H2_FAULTS)} and streams >= 2, "
                             "and only with them")
        if (self.check == "pool") != (self.slow > 0) or (self.check == "pool") != (self.fast > 0):
            raise ValueError("check = \"pool\" goes with slow >= 1 and fast >= 1, and only with them")
        if self.check == "pool":
            if self.fault != "stall-headers":
                raise ValueError("check = \"pool\" needs fault = \"stall-headers\": the slow origin's stall")
            if self.timeout_s * 1000 <= int(self.query.get("ms", 1000)):
                raise ValueError("check = \"pool\" needs timeout_s past the stall (query ms): the slow requests "
                                 "are answered, not ended by the timeout")
        if self.fault in ("connect-dark", "tls-stall") and self.check != "deadline":
            raise ValueError(f"fault = \"{self.fault}\" is judged by check = \"deadline\"")
        if self.check == "credentials":
            if self.fault not in REDIRECTS or self.follow_redirects is not True:
                raise ValueError(f"check = \"credentials\" needs a fault of {', '.join(REDIRECTS)} "
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

    @property
    def encoding(self) -> Encoding | None:
        """Who chooses the request's Accept-Encoding: "gzip" (the job), "library" (the library as
        it ships), None (a fault that is not content-coded: the job asks for no coding)."""
        if self.case.fault not in ENCODED:
            return None
        return self.case.accept_encoding or "gzip"

    @property
    def first_origin(self) -> str:
        """The fault origin the job's request goes to first (the ledger's name for it)."""
        return "s" if self.case.fault == "redirect-to-plain" else "a"

    def job(self, host: str, port: int, origins: dict[str, int] | None = None,
            tls_ca: str | None = None, recommended: bool = False) -> dict[str, Any]:
        """The job (docs/driver-protocol.md §3) against origin a at host:port, or the fault's own
        origin named in `origins` (the listening line's fault_* ports); `recommended`: with the
        option that makes the driver use its library's documented recommendation (the manifest's
        [behaviour.recommended])."""
        c = self.case
        scheme, key, path = ORIGINS.get(c.fault, ("http", "fault_a", f"/fault/{c.fault}"))
        if key != "fault_a":
            if not (origins or {}).get(key):
                raise LabError(f"the bench server has no {key} port for the case {self.name} (an older build, or not "
                               "on loopback): rebuild it with ./setup.sh")
            port = int(origins[key])  # type: ignore[index]
        url = f"{scheme}://{host}:{port}{path}"

        def entry(method: str, query: dict) -> dict[str, Any]:
            e: dict[str, Any] = {"method": method, "url": url + (f"?{urlencode(query)}" if query else ""), "repeat": 1}
            if c.headers:
                e["headers"] = dict(c.headers)
            if c.follow_redirects is not None:
                e["follow_redirects"] = c.follow_redirects
            return e

        case_entry = entry(c.method, {**c.query, "n": 2} if c.reuse else c.query)
        if c.form:
            case_entry.update(form=dict(c.form), form_encoding="urlencoded")
        requests = [entry("GET", {**c.query, "n": 1}), case_entry] if c.reuse else [case_entry]
        if c.streams:
            requests = [entry("GET", {**c.query, "n": n}) for n in range(1, c.streams + 1)]
        if c.slow:
            fast_url = f"http://{fast_host(host, origins)}/fault/landing"
            fast_ns = range(c.slow + 1, c.slow + c.fast + 1)
            requests = [entry("GET", {**c.query, "n": n}) for n in range(1, c.slow + 1)] + [
                {"method": "GET", "url": f"{fast_url}?n={n}", "repeat": 1} for n in fast_ns]
        return {"scenario": f"behave:{self.name}", "verify": False, "http": "2" if c.streams else "1.1",
                "tls_ca": tls_ca if scheme == "https" else None,
                "concurrency": c.concurrency or max(1, c.streams, c.slow + c.fast), "keep_alive": True, "cookies": False,
                "accept_gzip": self.encoding == "gzip",
                "timeout_s": c.timeout_s, "options": {"tcp_nodelay": None, "max_host_connections": None,
                                                      **({"recommended": True} if recommended else {}),
                                                      **({"accept_encoding": "library"}
                                                         if self.encoding == "library" else {})},
                "requests": requests}

    def params(self) -> dict[str, Any]:
        """What a stored cell keeps of its case: the fault's query and the timeout."""
        return {**self.case.query, "timeout_s": self.case.timeout_s}

    def capabilities(self) -> list[str]:
        c = self.case
        wanted = {"redirects": bool(c.follow_redirects), "keepalive": c.reuse, "form": bool(c.form),
                  "tls": ORIGINS.get(c.fault, ("http",))[0] == "https", "gzip": self.encoding == "gzip",
                  "http2": bool(c.streams), "parallel": bool(c.streams or c.slow)}
        return (["http1"] if not c.streams else []) + [name for name, needed in wanted.items() if needed]


def fast_host(host: str, origins: dict[str, int] | None) -> str:
    """host:port of origin c, the fast origin beside the slow one: the bench server's next
    address (127.0.0.2 beside 127.0.0.1), another host."""
    port = (origins or {}).get("fault_c")
    if not port:
        raise LabError("the bench server has no fault_c port (another host: it needs loopback, and a build with "
                       "origin c): rebuild it with ./setup.sh, and run behave on loopback")
    return f"{ipaddress.ip_address(host) + 1}:{port}"


def behaviours_dir() -> Path:
    return paths.ROOT / "behaviours"


def load_case(path: Path) -> BehaviourCase:
    data = read_toml(path, "behaviour case")
    try:
        case = Case.model_validate(data)
    except ValidationError as exc:
        raise LabInputError(describe_validation_error(path, exc)) from exc
    return BehaviourCase(path.stem, case, path)


CHECK_ORDER = ("deadline", "truncation", "credentials", "certificate", "see-other", "retry", "streams", "pool", "bomb", "headers",
               "next-address")


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
    peak_bytes: int | None = None    # the driver's peak memory (its control group), where capped
    capped: bool = False             # the cap's OOM killer ended a process of the driver
    dark_syns: int | None = None     # packets (SYNs) the driver sent to a dark address, where the lab counts them


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
    if c.check == "retry":
        return _judge_retry(bc, seen)
    if c.check == "see-other":
        return _judge_see_other(bc, seen)
    if c.check in ("bomb", "headers"):
        return _judge_memory(bc, seen)
    if c.check == "streams":
        return _judge_lowered(bc, seen) if c.fault == "h2-max-streams" else _judge_streams(bc, seen)
    if c.check == "certificate":
        return _judge_certificate(bc, seen)
    if c.check == "pool":
        return _judge_pool(bc, seen)
    if c.check == "next-address":
        return _judge_next_address(bc, seen)
    # credentials: judged on the headers the client sent to the first origin
    at_a = [e for e in seen.ledger if e.get("origin") == bc.first_origin]
    elsewhere = [e for e in seen.ledger if e.get("origin") != bc.first_origin]
    sent = [h for h in CREDENTIALS if any(h in e.get("credentials", []) for e in at_a)]
    asked = [h for h in CREDENTIALS if any(h.lower() == k.lower() for k in c.headers)]
    unsent = [h for h in asked if h not in sent]
    note = f" (it did not send {', '.join(unsent)} even to the first origin)" if unsent else ""
    if not elsewhere:
        how = f"reported {answered}" if answered else (f"error: {error}" if error else "no report")
        if seen.elapsed_s is None:
            how = f"nothing within {bc.limit_s:g} s: the lab killed it"
        if c.fault == "redirect-to-plain" and seen.elapsed_s is not None:  # refusing to leave https keeps them
            return BehaviourOutcome(bc.name, "ok", f"the redirect to plain http was not followed ({how})")
        return BehaviourOutcome(bc.name, "not-followed", f"no request reached the other origin ({how})")
    if not sent:
        return BehaviourOutcome(bc.name, "not-sent", f"asked to send {', '.join(asked)}, it sent none of them "
                                "to the first origin: the case shows nothing")
    leaked = [h for h in CREDENTIALS if any(h in e.get("credentials", []) for e in elsewhere)]
    if leaked:
        return BehaviourOutcome(bc.name, "leaked", f"{', '.join(leaked)} reached the other origin{note}")
    return BehaviourOutcome(bc.name, "ok", f"none of {', '.join(sent)} reached the other origin{note}")


def _sent(entries: list[dict]) -> str:
    """Where each of the entries arrived: the connection and the request's place on it."""
    return ", ".join(f"conn {e.get('conn')} #{e.get('seq')}" for e in entries)


def _judge_retry(bc: BehaviourCase, seen: Observed) -> BehaviourOutcome:
    """The keep-alive race, from the ledger: how often the numbered request (n = 2) arrived, and
    on which connection; what the driver reported of it."""
    c = bc.case
    first = [e for e in seen.ledger if e.get("n") == "1"]
    raced = [e for e in seen.ledger if e.get("n") == "2"]
    answered = [r for r in seen.responses if r.get("r") == 1]
    failed = "; ".join(str(e.get("message", ""))[:120] for e in seen.errors if e.get("r") == 1)
    if seen.elapsed_s is None:
        return BehaviourOutcome(bc.name, "hung", f"nothing within {bc.limit_s:g} s after the server dropped the "
                                f"request ({len(raced)} sent): the lab killed it")
    if not first or any(e.get("r") == 0 for e in seen.errors):
        return BehaviourOutcome(bc.name, "first-failed", "the first request, answered whole, was not reported as "
                                "answered: " + ("; ".join(str(e.get("message", ""))[:120] for e in seen.errors) or "-"))
    if not any(e.get("seq", 1) > 1 for e in raced):
        return BehaviourOutcome(bc.name, "not-reused", f"the {c.method} went out on a fresh connection "
                                f"({_sent(raced) or 'never sent'}): the race did not happen")
    where = f"{c.method} arrived {len(raced)}× ({_sent(raced)})"
    if answered and len(raced) == 1:
        return BehaviourOutcome(bc.name, "phantom", f"reported {answered[0].get('status')} for a {c.method} the server "
                                "never answered")
    if c.method == "POST":
        if len(raced) > 1:
            return BehaviourOutcome(bc.name, "duplicated", f"{where}, each with its {raced[-1].get('body_bytes')} B "
                                    "body: sent again without the program's word")
        return BehaviourOutcome(bc.name, "ok", f"{where}; reported as an error: {failed}")
    if len(raced) == 1:
        return BehaviourOutcome(bc.name, "no-retry", f"{where}; the dropped GET reported as an error, not retried: "
                                f"{failed}")
    if len(raced) > 2:
        return BehaviourOutcome(bc.name, "retried-more", f"{where}: retried more than once")
    if not answered:
        return BehaviourOutcome(bc.name, "retry-failed", f"{where}; retried, yet reported as an error: {failed}")
    return BehaviourOutcome(bc.name, "ok", f"{where}: retried once, then {answered[0].get('status')}")


def _judge_see_other(bc: BehaviourCase, seen: Observed) -> BehaviourOutcome:
    """A 303 after a POST, from the ledger: the method and body length that reached its target."""
    posted = [e for e in seen.ledger if e.get("path") == "/fault/see-other"]
    landed = [e for e in seen.ledger if e.get("path") != "/fault/see-other"]
    if not posted or posted[0].get("method") != "POST" or not posted[0].get("body_bytes"):
        got = f"{posted[0].get('method')} with {posted[0].get('body_bytes')} B" if posted else "nothing"
        return BehaviourOutcome(bc.name, "not-sent", f"asked to POST a form, it sent {got}: the case shows nothing")
    if not landed:
        how = f"nothing within {bc.limit_s:g} s: the lab killed it" if seen.elapsed_s is None else (
            ", ".join(f"reported {r.get('status')}" for r in seen.responses)
            or "; ".join(str(e.get("message", ""))[:120] for e in seen.errors) or "no report")
        return BehaviourOutcome(bc.name, "not-followed", f"no request reached the 303's target ({how})")
    first = landed[0]
    what = f"{first.get('method')} with a {first.get('body_bytes')} B body at the 303's target " \
           f"(the POST's was {posted[0].get('body_bytes')} B)"
    if first.get("method") == "GET" and not first.get("body_bytes"):
        return BehaviourOutcome(bc.name, "ok", what)
    return BehaviourOutcome(bc.name, "kept-post" if first.get("method") == "POST" else "kept-body", what)


OUT_OF_MEMORY = ("memoryerror", "outofmemory", "out of memory", "cannot allocate memory", "enomem", "heap out of")
OWN_OOM_SHARE = 0.25  # an out-of-memory error below this share of the cap is not the cap's doing
TIMED_OUT = ("timeout", "timed out", "time out", "deadline")


def _judge_memory(bc: BehaviourCase, seen: Observed) -> BehaviourOutcome:
    outcome = dataclasses.replace(_judge_memory_outcome(bc, seen), peak_bytes=seen.peak_bytes)
    if bc.case.check != "bomb" or outcome.outcome == "not-asked":  # not-asked names it already
        return outcome
    # the evidence of who asked for the coding: the request's Accept-Encoding as the server saw it
    return dataclasses.replace(outcome, detail=f"{outcome.detail}; Accept-Encoding as sent: {sent_encodings(seen)}")


def sent_encodings(seen: Observed) -> str:
    """The Accept-Encoding values of the requests that reached the fault, as the server saw them."""
    return "; ".join(sorted({e.get("accept_encoding") or "none" for e in seen.ledger if e.get("path")})) \
        or "no request arrived"


def _judge_memory_outcome(bc: BehaviourCase, seen: Observed) -> BehaviourOutcome:
    """A bomb or an oversized head, under the cell's memory cap: correct is an error from the
    client (a limit it keeps); a kill by the cap, or the runtime out of memory, is a client that
    held it all; an answer taken whole is said with its peak."""
    c = bc.case
    cap = c.memory_cap_mib or 0
    peak = f"peak {seen.peak_bytes / MIB:.0f} MiB" if seen.peak_bytes is not None else "peak not measured"
    error = "; ".join(str(e.get("message", ""))[:160] for e in seen.errors)
    if c.fault == "br-bomb" and not any(asks_for(e.get("accept_encoding", ""), "br") for e in seen.ledger):
        return BehaviourOutcome(bc.name, "not-asked", f"the request's Accept-Encoding ({sent_encodings(seen)}) did not "
                                "ask for br: the server sent 406, no bomb")
    if seen.capped:
        return BehaviourOutcome(bc.name, "held-all", f"ended by the cell's {cap} MiB memory cap ({peak}): "
                                "it held what it decoded in memory")
    # a bomb's out of memory is the runtime's (a JVM's heap, sized from the cap); a head of 1 MiB
    # cannot exhaust the cap, so there the words are the client's limit (libcurl says a header
    # over its maximum is CURLE_OUT_OF_MEMORY)
    # ... unless the peak stayed far below the cap: then the words are the decoder's own failure
    # (libcurl reports a brotli decoder's error as CURLE_OUT_OF_MEMORY), an error that ended it
    held = seen.peak_bytes is None or seen.peak_bytes >= cap * MIB * OWN_OOM_SHARE
    if c.check == "bomb" and seen.errors and held and any(m in error.lower() for m in OUT_OF_MEMORY):
        return BehaviourOutcome(bc.name, "held-all", f"its runtime ran out of memory under the {cap} MiB cap "
                                f"({peak}): {error}")
    # a time limit that fired while the client was still decoding is a deadline, not a limit on
    # what it decodes: with a longer timeout it would have gone on to the cap
    if c.check == "bomb" and seen.errors and seen.elapsed_s is not None and seen.elapsed_s >= c.timeout_s \
            and any(m in error.lower() for m in TIMED_OUT):
        return BehaviourOutcome(bc.name, "timed-out", f"its {c.timeout_s:g} s time limit ended the decoding "
                                f"after {seen.elapsed_s:.1f} s ({peak}), no limit on the decoded size: {error}")
    if seen.elapsed_s is None:
        return BehaviourOutcome(bc.name, "hung", f"nothing within {bc.limit_s:g} s ({peak}): the lab killed it")
    if seen.responses:
        r = seen.responses[0]
        if c.check == "bomb":
            mib = int(c.query.get("mib", 1024))
            whole = mib * MIB if c.fault == "br-bomb" else bomb_bytes(mib)
            got = int(r.get("bytes") or 0)
            if got == whole:
                return BehaviourOutcome(bc.name, "inflated", f"decoded all {whole} B ({peak})")
            if got < whole // 100:  # what came on the wire, or one layer of two: the program sees an encoded body
                return BehaviourOutcome(bc.name, "undecoded", f"handed over {got} B still encoded, not inflated "
                                        f"({peak})")
            return BehaviourOutcome(bc.name, "accepted-short", f"decoded {got} of {whole} B, reported as complete "
                                    f"({peak})")
        return BehaviourOutcome(bc.name, "accepted", f"took the head whole: {r.get('status')} ({peak})")
    return BehaviourOutcome(bc.name, "ok", f"error ({peak}): {error}")


def _judge_streams(bc: BehaviourCase, seen: Observed) -> BehaviourOutcome:
    """GOAWAY or REFUSED_STREAM with streams in flight, from the ledger and the report: a stream
    the server did not process may be sent again, so every request should be answered."""
    c = bc.case
    arrivals = {str(n): [e for e in seen.ledger if e.get("n") == str(n)] for n in range(1, c.streams + 1)}
    again = [f"n={n} {len(es)}×" for n, es in arrivals.items() if len(es) > 1]
    sent = f"sent again: {', '.join(again)}" if again else "none sent again"
    conns = len({e.get("conn") for e in seen.ledger})
    where = f"{len(seen.ledger)} request(s) on {conns} connection(s), {sent}"
    if seen.elapsed_s is None:
        return BehaviourOutcome(bc.name, "hung", f"nothing within {bc.limit_s:g} s ({where}): the lab killed it")
    if not any(e.get("seq", 1) > 1 for e in seen.ledger):
        return BehaviourOutcome(bc.name, "not-multiplexed", f"one request a connection ({where}): no stream was "
                                "in flight beside another, the case shows nothing")
    answered = sum(1 for r in seen.responses if r.get("status") == 200)
    if answered < c.streams:
        error = "; ".join(sorted({str(e.get("message", ""))[:120] for e in seen.errors}))
        return BehaviourOutcome(bc.name, "lost", f"{c.streams - answered} of {c.streams} reported as errors "
                                f"({where}): {error}")
    return BehaviourOutcome(bc.name, "ok", f"all {c.streams} answered ({where})")


def _judge_lowered(bc: BehaviourCase, seen: Observed) -> BehaviourOutcome:
    """MAX_CONCURRENT_STREAMS lowered with streams in flight, from the ledger: how often each
    request was processed, and the streams the server refused because the client opened them
    over the limit it had been told (server/internal/faults/faults_h2_limit.go)."""
    c = bc.case
    processed: dict[str, int] = {}
    for e in seen.ledger:
        if not e.get("refused"):
            processed[str(e.get("n"))] = processed.get(str(e.get("n")), 0) + 1
    refused = [e for e in seen.ledger if e.get("refused")]
    conns = len({e.get("conn") for e in seen.ledger})
    where = (f"{len(seen.ledger)} stream(s) on {conns} connection(s), {len(refused)} opened over the lowered limit "
             "and refused")
    if seen.elapsed_s is None:
        return BehaviourOutcome(bc.name, "hung", f"nothing within {bc.limit_s:g} s ({where}): the lab killed it")
    if not any(e.get("seq", 1) > 1 for e in seen.ledger):
        return BehaviourOutcome(bc.name, "not-multiplexed", f"one request a connection ({where}): no stream was in "
                                "flight when the limit fell, the case shows nothing")
    twice = [f"n={n} {k}×" for n, k in sorted(processed.items()) if k > 1]
    if twice:
        return BehaviourOutcome(bc.name, "duplicated", f"processed more than once: {', '.join(twice)} ({where})")
    answered = sum(1 for r in seen.responses if r.get("status") == 200)
    if answered < c.streams:
        error = "; ".join(sorted({str(e.get("message", ""))[:120] for e in seen.errors}))
        return BehaviourOutcome(bc.name, "lost", f"{c.streams - answered} of {c.streams} reported as errors "
                                f"({where}): {error}")
    if refused:
        return BehaviourOutcome(bc.name, "exceeded", f"all {c.streams} answered, after opening streams over the "
                                f"limit it had taken ({where}; each sent again)")
    return BehaviourOutcome(bc.name, "ok", f"all {c.streams} answered, each once, within the lowered limit ({where})")


# words an error that names a certificate problem uses, in one library or another
CERTIFICATE_WORDS = ("certificate", "cert", "x509", "x.509", "ssl", "tls", "verif", "self-signed", "self signed",
                     "expired", "hostname", "host name", "trust", "pkix", "issuer", "authority", "subject")


def asks_for(accept_encoding: str, coding: str) -> bool:
    """Whether an Accept-Encoding value takes the coding (named or "*", q above 0): the server's
    rule (server/internal/faults/faults_enc.go)."""
    for item in accept_encoding.split(","):
        name, _, params = item.partition(";")
        if name.strip().lower() not in (coding, "*"):
            continue
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    pass
        if q > 0:
            return True
    return False


def _judge_certificate(bc: BehaviourCase, seen: Observed) -> BehaviourOutcome:
    """A certificate the client must refuse, from the origin's ledger: each handshake (with what
    ended it, often the client's alert) and any request after one; and the driver's report."""
    c = bc.case
    what = CERTIFICATE_FAULTS[c.fault]
    handshakes = [e for e in seen.ledger if not e.get("path") and e.get("tls")]
    requests = [e for e in seen.ledger if e.get("path")]
    shook = "; ".join(dict.fromkeys("completed, then no request" if e["tls"] == "ok" and not requests else str(e["tls"])
                                    for e in handshakes))
    error = "; ".join(str(e.get("message", ""))[:160] for e in seen.errors)
    if seen.elapsed_s is None:
        return BehaviourOutcome(bc.name, "hung", f"nothing within {bc.limit_s:g} s (handshakes: {shook or 'none'}): "
                                "the lab killed it")
    if requests:
        got = ", ".join(f"{r.get('status')} with {r.get('bytes')} B" for r in seen.responses) or f"an error: {error}"
        return BehaviourOutcome(bc.name, "cert-accepted", f"took the {what} certificate: {len(requests)} request(s) "
                                f"reached the server after the handshake; reported {got}")
    if seen.responses:
        return BehaviourOutcome(bc.name, "phantom", f"reported {seen.responses[0].get('status')}, yet no request "
                                "reached the server")
    if not handshakes:
        return BehaviourOutcome(bc.name, "not-sent", f"no TLS handshake reached the origin: {error or 'no error'}")
    named = any(w in error.lower() for w in CERTIFICATE_WORDS)
    return BehaviourOutcome(bc.name, "ok", f"refused{'' if named else ' (the error does not name the certificate)'}: "
                            f"{error or 'no error reported'}; the server saw: {shook}")


def _judge_pool(bc: BehaviourCase, seen: Observed) -> BehaviourOutcome:
    """One slow origin beside a fast one, from the ledger's arrival times (the server's clock):
    the fast origin answers a request as it reads it, so a fast request's own service time is
    nil; one that waited for a slot a slow request held cannot arrive before that slow request's
    answer, which the server sends the stall (query ms) after the slow request arrived. Correct:
    every fast request answered, and arrived before the first slow answer went out (the first
    slow arrival + the stall; on a busy host the fast ones come within tens of ms)."""
    c = bc.case
    stall_ms = int(c.query.get("ms", 1000))
    slow = [e for e in seen.ledger if e.get("origin") == "a"]
    fast = [e for e in seen.ledger if e.get("origin") == "c"]
    if seen.elapsed_s is None:
        return BehaviourOutcome(bc.name, "hung", f"nothing within {bc.limit_s:g} s ({len(slow)} slow and {len(fast)} "
                                "fast request(s) arrived): the lab killed it")
    if not slow:
        return BehaviourOutcome(bc.name, "not-sent", "no slow request reached the server: the case shows nothing")
    zero = min(e.get("at_ms", 0.0) for e in slow)
    answer_ms = stall_ms  # the first slow answer, after the first slow arrival
    arrivals = sorted(round(e.get("at_ms", 0.0) - zero) for e in fast)
    where = (f"{len(slow)} slow arrived, the first answered at +{answer_ms} ms; the {len(fast)} fast arrived at "
             + (", ".join(f"{a:+d}" for a in arrivals) or "-") + " ms after the first slow one")
    answered = sum(1 for r in seen.responses if r.get("r", -1) >= c.slow and r.get("status") == 200)
    if answered < c.fast:
        error = "; ".join(sorted({str(e.get("message", ""))[:120] for e in seen.errors if e.get("r", -1) >= c.slow}))
        return BehaviourOutcome(bc.name, "fast-failed", f"{c.fast - answered} of {c.fast} fast request(s) not answered "
                                f"({where}): {error or 'no error reported'}")
    behind = [a for a in arrivals if a >= answer_ms]
    if behind or len(fast) < c.fast:
        return BehaviourOutcome(bc.name, "starved", f"{len(behind)} of {c.fast} fast request(s) arrived only after a "
                                f"slow answer, held behind the slow ones ({where})")
    return BehaviourOutcome(bc.name, "ok", f"every fast request arrived before any slow answer ({where})")


def _judge_next_address(bc: BehaviourCase, seen: Observed) -> BehaviourOutcome:
    """A host name whose first address never answers, from the dark address's SYN count, the
    bench server's ledger and the lab's clock: correct is the 200 from the second address within
    NEXT_ADDRESS_S (the client gave up on the first one, or raced it, as RFC 8305 asks)."""
    arrived = [e for e in seen.ledger if e.get("path")]
    syns = "not counted" if seen.dark_syns is None else str(seen.dark_syns)
    where = f"SYNs to the dark address: {syns}; requests at the bench server: {len(arrived)}"
    if seen.elapsed_s is None:
        return BehaviourOutcome(bc.name, "no-fallback", f"nothing within {bc.limit_s:g} s ({where}): the lab killed it")
    ms = round(seen.elapsed_s * 1000)
    answered = [r for r in seen.responses if r.get("status") == 200]
    if not answered:
        error = "; ".join(str(e.get("message", ""))[:160] for e in seen.errors) or \
            ", ".join(f"reported {r.get('status')}" for r in seen.responses) or "no report"
        return BehaviourOutcome(bc.name, "no-fallback", f"no answer: an error after {ms} ms ({where}): {error}")
    if seen.dark_syns == 0:
        return BehaviourOutcome(bc.name, "dark-untried", f"200 after {ms} ms without a SYN to the dark address "
                                f"({where}): the second address came first, the case shows nothing")
    if not arrived:
        return BehaviourOutcome(bc.name, "phantom", f"reported 200, yet no request reached the server ({where})")
    if seen.elapsed_s <= NEXT_ADDRESS_S:
        return BehaviourOutcome(bc.name, "ok", f"200 after {ms} ms ({where})")
    return BehaviourOutcome(bc.name, "slow-fallback", f"200 after {ms} ms, past RFC 8305's longest wait of "
                            f"{NEXT_ADDRESS_S:g} s before the next address ({where})")
