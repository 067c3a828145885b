"""Dashboard fixtures: a demo site with a plausible snapshot, and a real-browser harness.

The browser harness serves the app from a thread (werkzeug on 127.0.0.1, a free port)
and drives the system Chromium through Playwright.  Browser tests fail, never skip,
when Chromium is missing.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import expect
from werkzeug.serving import make_server

# tests/ is on sys.path (rootdir conftest), where tests/dashboard would shadow the real
# package as a namespace package; put the repository first so `dashboard` is ours.
_REPO_DIR = str(Path(__file__).resolve().parents[2])
if sys.path[0] != _REPO_DIR:
    sys.path.insert(0, _REPO_DIR)

from tests.dashboard.standin_hub import StandinView, standin_app, synthetic_snapshot  # noqa: E402
from twin.site.load import load_site  # noqa: E402

logging.getLogger("werkzeug").setLevel(logging.WARNING)
CHROMIUM = os.environ.get("CLUSTERTWIN_CHROMIUM", "/usr/bin/chromium")
CHROME_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-unsafe-swiftshader",  # software WebGL for scattergl without a GPU
]
SCREENSHOT_DIR = Path(__file__).resolve().parents[1] / "screenshots"
VIEWPORTS = {"1366x768": (1366, 768), "1920x1080": (1920, 1080)}
SNAPSHOT_TS = datetime(2026, 7, 15, 14, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def demo_state():
    return load_site("demo")


@pytest.fixture(scope="session")
def demo_snapshot(demo_state):
    return synthetic_snapshot(demo_state, ts=SNAPSHOT_TS, seed=1)


@pytest.fixture()
def demo_view(demo_state, demo_snapshot):
    """A fresh stand-in live view per test (its actions' acknowledge/silence mutate its alerts)."""
    return StandinView(demo_state, demo_snapshot)


@pytest.fixture(scope="session")
def dash_app(demo_state):
    """The app over a demo stand-in hub; importing it loads the page modules."""

    return standin_app(StandinView(demo_state, synthetic_snapshot(demo_state, seed=2), live=True))


@pytest.fixture(scope="session")
def page_module(dash_app):
    """Import a page module by name (pages can only be imported once an app exists)."""
    return lambda name: importlib.import_module(f"dashboard.pages.{name}")


class ServedApp:
    """A Dash app served from a background thread; ``url(path)`` builds page URLs."""

    def __init__(self, app):
        self.server = make_server("127.0.0.1", 0, app.server, threaded=True)
        self.base_url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/") -> str:
        return self.base_url + path

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=5)


@pytest.fixture(scope="session")
def served_app(dash_app):
    """The demo app served on 127.0.0.1 for the whole session."""
    served = ServedApp(dash_app)
    yield served
    served.stop()


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (the system one, no Playwright download)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: browser tests need it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_FLAGS)
        yield browser
        browser.close()


class ConsoleLog:
    """Collects browser console errors and failed requests of one page."""

    def __init__(self, page):
        self.errors: list[str] = []
        page.on(
            "console",
            lambda msg: self.errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None,
        )
        page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        page.on("requestfailed", self._request_failed)
        self.external: list[str] = []
        page.on(
            "request",
            lambda req: (
                self.external.append(req.url)
                if not req.url.startswith(("http://127.0.0.1", "data:", "blob:"))
                else None
            ),
        )

    def _request_failed(self, request) -> None:
        # a live-update request still in flight when the test navigates away is aborted: not an error
        if request.failure != "net::ERR_ABORTED":
            self.errors.append(f"request failed: {request.url} ({request.failure})")


# Waits (expect, locators, navigation) allow for a loaded 2-core machine: a colossus page
# renders in about 1 s there when idle, several seconds when other work competes.
BROWSER_TIMEOUT_MS = 20_000
expect.set_options(timeout=BROWSER_TIMEOUT_MS)


@pytest.fixture()
def new_page(browser):
    """Factory: ``new_page("1366x768") -> (page, console_log)``; pages close after the test."""
    contexts = []

    def make(viewport: str = "1366x768"):
        width, height = VIEWPORTS[viewport]
        context = browser.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(BROWSER_TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        return page, ConsoleLog(page)

    yield make
    for context in contexts:
        context.close()


@pytest.fixture()
def screenshot():
    """``screenshot(page, name)`` writes ``tests/screenshots/<name>.png`` (full page)."""

    def take(page, name: str) -> Path:
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOT_DIR / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 10_000, f"screenshot {path.name} looks empty"
        return path

    return take


@pytest.fixture(scope="session")
def colossus_state():
    return load_site("colossus")


@pytest.fixture(scope="session")
def colossus_snapshot(colossus_state):
    return synthetic_snapshot(colossus_state, ts=SNAPSHOT_TS, seed=3)


@pytest.fixture()
def view_request(dash_app):
    """``with view_request(view, db=None):`` runs page code in a request of the app with ``view`` as its live view.

    The view's alert actions (``view.actions``, when it has them) are the app's too, and
    ``db`` its site database.
    """
    from contextlib import contextmanager

    from dashboard.views.context import ALERT_ACTIONS_KEY, LIVE_VIEW_KEY, SITE_DB_KEY

    @contextmanager
    def use(view, db=None):
        config = dash_app.server.config
        saved = {key: config.get(key) for key in (LIVE_VIEW_KEY, ALERT_ACTIONS_KEY, SITE_DB_KEY)}
        config.update({LIVE_VIEW_KEY: view, ALERT_ACTIONS_KEY: getattr(view, "actions", None), SITE_DB_KEY: db})
        try:
            with dash_app.server.test_request_context():
                yield
        finally:
            config.update(saved)

    return use


def find_component(component, component_id):
    """The component with ``id == component_id`` inside a Dash layout tree (None if absent)."""
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    if children is None:
        return None
    for child in children if isinstance(children, (list, tuple)) else [children]:
        found = find_component(child, component_id)
        if found is not None:
            return found
    return None


@pytest.fixture()
def find():
    return find_component


@pytest.fixture(scope="session")
def live_colossus(tmp_path_factory):
    """The colossus live twin (real hub, synthetic source, SQLite) with the dashboard served."""
    from dashboard.app import app_for_hub
    from ingest.live.runtime import start_hub

    db = tmp_path_factory.mktemp("live") / "live.db"
    runtime = start_hub("colossus", f"sqlite:///{db}", ("synthetic",))
    served = ServedApp(app_for_hub(runtime.hub, tick_ms=1000))
    yield served, runtime.hub
    served.stop()
    runtime.stop()


@pytest.fixture()
def serve_app():
    """Factory: ``serve_app(app) -> ServedApp``, stopped after the test."""
    started = []

    def start(app) -> ServedApp:
        served = ServedApp(app)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()
