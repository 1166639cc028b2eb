"""A cell's figures as short texts, shared by the table and the long form."""

from __future__ import annotations

STATUS_LABEL = {"failed": "FAILED"}
# marks a driver that declares settings of its own (docs/driver-protocol.md §8)
DEPARTED = "†"
STATUS_STYLE = {"failed": "bold red", "unsupported": "yellow", "not-installed": "dim", "running": "cyan"}


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def throughput(f: dict) -> str:
    """The median throughput, or both modes when the trials fell into two (fastest first, with
    their trial counts): a median between two modes is no figure the client ever had."""
    if f.get("modes"):
        fast, slow = f["modes"]
        return f"two modes: {_number(fast['throughput'])} ({fast['trials']}) / {_number(slow['throughput'])} " \
               f"({slow['trials']}) {f['unit']}"
    return f"{_number(f['throughput'])} {f['unit']}"


def precision(f: dict) -> str:
    return "" if f.get("modes") else f"±{f['precision'] * 100:.1f}%"


def count(f: dict) -> str:
    """Requests per trial, and what the scenario asks when the lab scaled it to the trial budget."""
    n = f.get("requests")
    full = f.get("scenario_requests")
    text = f"n={n:,}" if n is not None else ""
    if n is not None and full and full != n:
        text += f" of {full:,}"
    return text


def cpu_per_request(f: dict) -> str:
    """User + system CPU of the driver's tree per request (the timed phase's medians)."""
    n = f.get("requests") or 0
    if not n:
        return ""
    seconds = (f["cpu_user_s"] + f["cpu_sys_s"]) / n
    return f"CPU {seconds * 1e6:,.0f} µs/req" if seconds < 0.01 else f"CPU {seconds * 1e3:,.1f} ms/req"


def memory(f: dict) -> str:
    return f"mem {f['peak_rss_kb'] / 1024:.1f} MiB"


def startup(f: dict) -> str:
    """Process start to the first `ready`: reported apart from the timed figures."""
    s = f.get("startup_s")
    if s is None:
        return ""
    return f"start {s * 1000:,.0f} ms" if s < 10 else f"start {s:,.1f} s"


BUDGET_CUT = "cut by time budget"


def flags(f: dict, said_once: frozenset[str] = frozenset()) -> list[str]:
    """The cell's flags, less those said once for the whole table (`said_once`)."""
    out = []
    if f.get("noisy"):
        out.append("noisy")
    if f.get("disturbed_kept"):
        out.append(f"{f['disturbed_kept']} disturbed")
    if f.get("budget_stopped"):
        out.append(BUDGET_CUT)
    return [flag for flag in out if flag not in said_once]


def said_once(cells: list[dict]) -> frozenset[str]:
    """The budget flag, when most measured cells carry it: then it is one line under the table
    instead of a word in nearly every cell."""
    ok = [c for c in cells if c["status"] == "ok" and c.get("figures")]
    cut = sum(1 for c in ok if c["figures"].get("budget_stopped"))
    return frozenset({BUDGET_CUT}) if ok and cut > len(ok) / 2 else frozenset()


def said_once_line(cells: list[dict]) -> str | None:
    """'cut by time budget: 50 of 80 cells …' when `said_once` holds the flag, else None."""
    if BUDGET_CUT not in said_once(cells):
        return None
    ok = [c for c in cells if c["status"] == "ok" and c.get("figures")]
    cut = sum(1 for c in ok if c["figures"].get("budget_stopped"))
    return (f"{BUDGET_CUT}: {cut} of {len(ok)} cells stopped at their minimum of trials when the run's time "
            "was spent (their ± says what that left; --time-budget gives them more)")


def driver_label(cell: dict) -> str:
    """The driver's id, marked when its figures come with declared departures."""
    return f"{cell['driver']} {DEPARTED}" if cell.get("departures") else cell["driver"]


def status_line(cell: dict, width: int = 70) -> str:
    """'FAILED: reason' (first line, cut to `width`)."""
    label = STATUS_LABEL.get(cell["status"], cell["status"])
    reason = (cell.get("reason") or "").strip().splitlines()[0] if cell.get("reason") else ""
    if len(reason) > width:
        reason = reason[: width - 1] + "…"
    return f"{label}: {reason}" if reason else label
