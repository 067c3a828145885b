"""Capture what a browser's live updates POST: the interval-driven ``/_dash-update-component`` requests of a page.

A headless Chromium opens each page of a served app, waits for a few live ticks and
records every callback request that the shell's interval (``n_intervals``) triggered,
with the page URL it was sent from (sent again as Referer, as the browser did; the view on
screen is in the body, from the shell's screen store).
"""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

from dashboard import ids

CALLBACK_PATH = "/_dash-update-component"
CHROMIUM = "/usr/bin/chromium"
CHROME_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-unsafe-swiftshader",
]


def _is_tick(body: dict) -> bool:
    return any(p.startswith(f"{ids.Shell.TICK}.") for p in body.get("changedPropIds", []))


def capture_ticks(
    base_url: str, paths: tuple[str, ...], ticks: int = 2, timeout_s: float = 60.0
) -> dict[str, list[dict]]:
    """Page path → the distinct tick requests of that page (``{"body", "path", "referer"}``: the request path holds Dash's query), in order."""
    from playwright.sync_api import sync_playwright

    out: dict[str, list[dict]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_FLAGS)
        try:
            for path in paths:
                seen: dict[str, dict] = {}
                counts: dict[str, int] = {}
                context = browser.new_context(viewport={"width": 1920, "height": 1080})
                page = context.new_page()

                def record(request, seen=seen, counts=counts):
                    url = urlsplit(request.url)
                    if request.method != "POST" or url.path != CALLBACK_PATH:
                        return
                    body = json.loads(request.post_data or "{}")
                    if _is_tick(body):
                        target = url.path + (f"?{url.query}" if url.query else "")
                        seen.setdefault(
                            body["output"],
                            {"body": body, "path": target, "referer": request.headers.get("referer", "")},
                        )
                        counts[body["output"]] = counts.get(body["output"], 0) + 1

                page.on("request", record)
                page.goto(base_url + path)
                deadline = time.monotonic() + timeout_s
                while time.monotonic() < deadline and (not counts or min(counts.values()) < ticks):
                    page.wait_for_timeout(200)
                context.close()
                if not seen:
                    raise RuntimeError(f"no live update seen on {path} within {timeout_s:.0f} s")
                out[path] = list(seen.values())
        finally:
            browser.close()
    return out
