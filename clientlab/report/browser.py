"""The report in headless Chromium (Debian's package, driven by Playwright), cut off from the
network: any request but the report file itself is recorded and refused."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from clientlab.errors import LabError

CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT = {"width": 1200, "height": 900}
READY_TIMEOUT_MS = 60_000


@dataclass
class Loaded:
    """The page with every chart drawn, and what happened while it loaded."""

    page: object  # playwright.sync_api.Page
    charts: int
    requests: list[str] = field(default_factory=list)      # every URL the page asked for
    errors: list[str] = field(default_factory=list)        # console errors and uncaught exceptions


@contextmanager
def open_report(path: Path, scale: float = 1, width: int | None = None) -> Iterator[Loaded]:
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise LabError(f"{CHROMIUM} is missing: run ./setup.sh (Debian package chromium)")
    url = path.resolve().as_uri()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM))
        try:
            viewport = {**VIEWPORT, "width": width} if width else VIEWPORT
            page = browser.new_page(viewport=viewport, device_scale_factor=scale)
            loaded = Loaded(page, 0)
            page.on("request", lambda r: loaded.requests.append(r.url))
            page.on("console", lambda m: loaded.errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: loaded.errors.append(str(exc)))
            page.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
            page.goto(url)
            try:
                page.wait_for_function("document.body.dataset.chartsReady !== undefined", timeout=READY_TIMEOUT_MS)
            except Exception as exc:  # noqa: BLE001 — a timeout is reported with what the page said
                raise LabError(f"the report's charts did not render: {'; '.join(loaded.errors) or exc}") from exc
            loaded.charts = int(page.evaluate("document.body.dataset.chartsReady"))
            yield loaded
        finally:
            browser.close()
