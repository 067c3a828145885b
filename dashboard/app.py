"""The Dash app factory: ``create_app(hub)`` wires the shell, the pages and the hub together.

Pages live one per file in ``dashboard/pages`` (Dash pages, ``layout(**kwargs)`` and
their callbacks beside them); the shell is :mod:`dashboard.shell`.  Everything is served
from this process: Dash's own bundles with ``serve_locally`` and our CSS from the
top-level ``assets/`` folder — no CDN, no external fonts.  ``assets/`` also holds a
vendored plotly.js bundle with only the trace types the app draws (its header says how
to rebuild it); dcc.Graph uses that ``window.Plotly`` instead of fetching Dash's full
plotly.min.js, which roughly halves the first render with an empty browser cache.
"""

from __future__ import annotations

import logging
from pathlib import Path

import dash

from dashboard import compare, shell
from dashboard.dash_internals import adopt_global_callbacks, clear_global_callbacks
from dashboard.hub_context import HUB_CONFIG_KEY
from dashboard.theme import register_template

log = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).resolve().parent
PAGES_DIR = PACKAGE_DIR / "pages"
ASSETS_DIR = PACKAGE_DIR.parent / "assets"


def create_app(hub, tick_ms: int = shell.TICK_MS) -> dash.Dash:
    """A Dash app showing ``hub`` (a :class:`ingest.live.hub.LiveHub` or a stand-in).

    ``tick_ms`` is the live-update period (≤ 2000 ms).
    """
    register_template()
    clear_global_callbacks()  # the page modules register theirs afresh when Dash imports them
    app = dash.Dash(
        "dashboard",
        use_pages=True,
        pages_folder=str(PAGES_DIR),
        assets_folder=str(ASSETS_DIR),
        serve_locally=True,
        title="ClusterTwin",
        update_title=None,
        suppress_callback_exceptions=True,
    )
    app.server.config[HUB_CONFIG_KEY] = hub
    adopt_global_callbacks(app)
    shell.register_callbacks(app)
    compare.register_callbacks(app)
    app.layout = shell.layout(hub.site_name, tick_ms)
    log.info("dashboard app created for site %s with %d pages", hub.site_name, len(dash.page_registry))
    return app
