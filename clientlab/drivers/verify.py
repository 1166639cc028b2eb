"""Did the client do the work right? Checks a driver's report against the server's record.

The full check runs in the untimed verification pass (the server hashes every body it sends);
every timed trial gets the cheap check (counts, statuses, versions) so that a driver cannot
do less work once the clock runs. Each check returns the problems found, worded for a user.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from typing import Any

from clientlab.drivers.job import PlannedJob

MAX_PROBLEMS = 5


def _path(entry: dict) -> str:
    return entry["path"].split("?", 1)[0]


def _report_problems(planned: PlannedJob, report: dict) -> list[str]:
    """Counts, statuses and versions the driver reported."""
    problems: list[str] = []
    errors = report.get("errors") or []
    if errors:
        first = errors[0]
        problems.append(f"{len(errors)} request(s) failed without a response, e.g. request entry "
                        f"{first.get('r')}: {first.get('message')}")
    responses = report.get("responses")
    if not isinstance(responses, list):
        return problems + ["report has no 'responses' list"]
    by_entry: dict[int, list[dict]] = defaultdict(list)
    for item in responses:
        if not isinstance(item, dict) or not isinstance(item.get("r"), int):
            return problems + [f"malformed response item in report: {str(item)[:120]}"]
        by_entry[item["r"]].append(item)
    for r, expect in enumerate(planned.expectations):
        got = by_entry.pop(r, [])
        if len(got) != expect.repeat:
            problems.append(f"request entry {r}: {expect.repeat} expected, {len(got)} reported")
        statuses = Counter(item.get("status") for item in got)
        wrong = {s: c for s, c in statuses.items() if s != expect.status}
        if wrong:
            problems.append(f"request entry {r}: status {expect.status} expected, got {dict(wrong)}")
        versions = Counter(str(item.get("http")) for item in got)
        if set(versions) - {planned.http_label}:
            problems.append(f"request entry {r}: HTTP/{planned.http_label} asked, client reports {dict(versions)}")
    if by_entry:
        problems.append(f"report names request entries that do not exist: {sorted(by_entry)}")
    return problems


def _server_problems(planned: PlannedJob, snapshot: dict) -> list[str]:
    """What the server saw: how many requests, in which version, on how many connections."""
    problems: list[str] = []
    expected = planned.server_requests
    if snapshot["requests"] != expected:
        problems.append(f"server saw {snapshot['requests']} requests, the job makes {expected}")
    server_version = planned.server_version
    other = {v: c for v, c in snapshot.get("versions", {}).items() if v != server_version}
    if other:
        fallback = " (the client fell back to another version)" if server_version == "HTTP/3.0" else ""
        problems.append(f"server saw requests in {other}, the job asked for {server_version}{fallback}")
    if not planned.job["keep_alive"] and snapshot["connections"] < snapshot["requests"]:
        problems.append(f"keep_alive is off but {snapshot['requests']} requests came on "
                        f"{snapshot['connections']} connection(s)")
    if snapshot.get("carried_requests"):
        # connections open before the reset that carry requests now: the protocol says to close
        # the client after every job (a close that races the reset carries no request: not this)
        problems.append(f"driver kept connections across jobs: {snapshot['carried_requests']} request(s) came on "
                        f"{snapshot.get('carried_connections', 0)} connection(s) opened before this job")
    return problems


def check_trial(planned: PlannedJob, report: dict, snapshot: dict) -> list[str]:
    """The check every timed trial gets."""
    return (_report_problems(planned, report) + _server_problems(planned, snapshot))[:MAX_PROBLEMS]


def _file_digest(path) -> tuple[int, str]:  # noqa: ANN001 - a Path
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def check_verification(planned: PlannedJob, report: dict, snapshot: dict) -> list[str]:
    """The full check of the verification pass (the server recorded body digests)."""
    problems = _report_problems(planned, report) + _server_problems(planned, snapshot)
    log: list[dict[str, Any]] = snapshot.get("log") or []  # null when the server logged no request
    if snapshot.get("log_dropped"):
        problems.append(f"server request log overflowed ({snapshot['log_dropped']} dropped): lower the counts")
    sent: dict[str, set[tuple[int, str]]] = defaultdict(set)
    for entry in log:
        if entry.get("status") == 200 and entry.get("resp_sha256"):
            sent[_path(entry)].add((entry["resp_body_bytes"], entry["resp_sha256"]))
    responses = report.get("responses") or []
    for r, expect in enumerate(planned.expectations):
        mine = [item for item in responses if isinstance(item, dict) and item.get("r") == r]
        bodies = sent.get(expect.final_path, set())
        if expect.status == 200:
            bad = [item for item in mine if (item.get("bytes"), item.get("sha256")) not in bodies]
            if bad and bodies:
                b = bad[0]
                want = next(iter(bodies))
                problems.append(
                    f"request entry {r}: {len(bad)} body(ies) differ from what the server sent for "
                    f"{expect.final_path}: got {b.get('bytes')} bytes sha256 {str(b.get('sha256'))[:16]}…, "
                    f"sent {want[0]} bytes sha256 {want[1][:16]}…"
                )
            elif bad:
                problems.append(f"request entry {r}: the server never sent {expect.final_path} successfully")
        entries = [e for e in log if _path(e) == expect.final_path]
        if expect.form_kind:
            wrong_kind = [e for e in entries if e.get("form_kind") != expect.form_kind]
            wrong_fields = [e for e in entries if e.get("form_sha256") != expect.form_sha256]
            if wrong_kind:
                problems.append(f"request entry {r}: a {expect.form_kind} form was asked, the server "
                                f"received {Counter(e.get('form_kind') for e in wrong_kind).most_common(1)[0][0]}")
            elif wrong_fields:
                problems.append(f"request entry {r}: the server received other form fields than the job's")
        if expect.upload_size is not None:
            wrong = [e for e in entries if e.get("req_body_bytes") != expect.upload_size]
            if wrong:
                problems.append(f"request entry {r}: uploaded {wrong[0].get('req_body_bytes')} bytes, "
                                f"the body has {expect.upload_size}")
        if expect.redirect_hops:
            hops = sum(1 for e in log if _path(e).startswith("/redirect/"))
            want = expect.repeat * expect.redirect_hops
            if hops < want:
                problems.append(f"request entry {r}: {want} redirect hops to follow, the server saw {hops}")
        if expect.gzip_asked and not all(e.get("gzip") for e in entries):
            problems.append(f"request entry {r}: gzip was asked but not every request accepted it")
        if expect.sink_path is not None:
            if not expect.sink_path.exists():
                problems.append(f"request entry {r}: sink file {expect.sink_path} was not written")
            elif bodies:
                size, digest = _file_digest(expect.sink_path)
                if (size, digest) not in bodies:
                    problems.append(f"request entry {r}: sink file holds {size} bytes that differ from the body sent")
    refused = [e for e in log if e.get("cookie_ok") is False]
    if refused:
        problems.append(f"{len(refused)} request(s) to {_path(refused[0])} came without the session cookie")
    return problems[:MAX_PROBLEMS]
