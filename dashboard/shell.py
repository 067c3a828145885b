"""The app shell: header with site name, navigation and data ages, the live tick, the page slot."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import dash
from dash import ALL, Input, Output, dcc, html

from dashboard import ids
from dashboard.components.data_age import DEAD_AFTER_S, STALE_AFTER_S, age_badges, format_age
from dashboard.components.nav import PAGES, nav_bar
from dashboard.hub_context import current_hub

TICK_MS = 2000  # live-update period of every page


def layout(site_name: str, tick_ms: int = TICK_MS) -> html.Div:
    """The frame around every page; ``dash.page_container`` renders the page inside."""
    header = html.Header(
        [
            html.Div(
                [html.Span("ClusterTwin", className="brand"), html.Span(site_name, id=ids.Shell.SITE_NAME, className="site-name")],
                className="brand-block",
            ),
            nav_bar(),
            html.Div(
                [html.Span(id=ids.Shell.CLOCK, className="clock"), html.Div(id=ids.Shell.SOURCE_AGES, className="source-ages")],
                className="status-block",
            ),
        ],
        id=ids.Shell.HEADER,
        className="header",
    )
    return html.Div(
        [
            dcc.Location(id=ids.Shell.LOCATION),
            dcc.Interval(id=ids.Shell.TICK, interval=tick_ms, n_intervals=0),
            header,
            html.Main(dash.page_container, id=ids.Shell.MAIN, className="main"),
        ],
        className="shell",
    )


def snapshot_age_s(snapshot_ts: datetime | None, now: datetime | None = None) -> float:
    """Seconds since the snapshot time (inf without a snapshot)."""
    if snapshot_ts is None:
        return math.inf
    now = now or datetime.now(timezone.utc)
    return max(0.0, (now - snapshot_ts).total_seconds())


def status_view(snapshot_ts: datetime | None, source_ages_s: dict[str, float], now: datetime | None = None) -> tuple:
    """(clock text, age badges, main-area class) for the header; pure, for tests."""
    age = snapshot_age_s(snapshot_ts, now)
    if snapshot_ts is None:
        clock = "no data yet"
    else:
        clock = f"{snapshot_ts.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC · {format_age(age)} old"
    main_class = "main"
    if age >= DEAD_AFTER_S:
        main_class = "main is-dead"
    elif age >= STALE_AFTER_S:
        main_class = "main is-stale"
    return clock, age_badges(source_ages_s), main_class


def register_callbacks(app: dash.Dash) -> None:
    """Header status on every tick; highlight the active nav link in the browser."""

    @app.callback(
        Output(ids.Shell.CLOCK, "children"),
        Output(ids.Shell.SOURCE_AGES, "children"),
        Output(ids.Shell.MAIN, "className"),
        Input(ids.Shell.TICK, "n_intervals"),
    )
    def update_status(_n: int):
        hub = current_hub()
        snapshot = hub.latest()
        return status_view(snapshot.ts if snapshot is not None else None, hub.source_ages())

    app.clientside_callback(
        """
        function(pathname, ids) {
            var p = (pathname || '/').replace(/\\/+$/, '') || '/';
            return ids.map(function(id) { return id.path === p ? 'nav-link active' : 'nav-link'; });
        }
        """,
        Output(ids.nav_link(ALL), "className"),
        Input(ids.Shell.LOCATION, "pathname"),
        dash.State(ids.nav_link(ALL), "id"),
    )


__all__ = ["PAGES", "TICK_MS", "layout", "register_callbacks", "status_view"]
