"""The app shell: header with site name, navigation, search (Ctrl-K) and data ages, the view banner, the live tick, the page slot.

The view on screen comes from the URL (``?view=…&compare=…&diff=1``, see
:mod:`dashboard.views.registry`): the banner names a scenario or replay view, the clock shows
its time instead of an age, and every in-app link keeps the view parameters.  The shell's
screen store (``ids.Shell.SCREEN``) holds the page path and view parameters of the URL, set
by a clientside callback on the shell's ``dcc.Location`` (:data:`SCREEN_OF_URL_JS`); every
callback that reads the view is given it (:mod:`dashboard.views.context`).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import dash
from dash import ALL, Input, Output, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids
from dashboard.callbacks.dash_internals import PUSH_STATE_JS
from dashboard.components.data_age import DEAD_AFTER_S, STALE_AFTER_S, age_badges, format_age
from dashboard.components.nav import PAGES, nav_bar
from dashboard.components.search_box import register_callbacks as register_search
from dashboard.components.search_box import search_box
from dashboard.components.view_banner import banner, unavailable_banner, view_time
from dashboard.views.context import VIEW_PARAMS, live_view, selection_of
from dashboard.views.registry import ViewUnavailable, screen_for

TICK_MS = 2000  # live-update period of every page


def layout(site_name: str, tick_ms: int = TICK_MS, account=None) -> html.Div:
    """The frame around every page; ``dash.page_container`` renders the page inside.

    ``account`` is the logged-in user's block (name, role, log out), if any.
    """
    header = html.Header(
        [
            html.Div(
                [
                    html.Span("ClusterTwin", className="brand"),
                    html.Span(site_name, id=ids.Shell.SITE_NAME, className="site-name"),
                ],
                className="brand-block",
            ),
            nav_bar(),
            search_box(),
            html.Div(
                [
                    html.Span(id=ids.Shell.CLOCK, className="clock"),
                    html.Div(id=ids.Shell.SOURCE_AGES, className="source-ages"),
                    *([account] if account is not None else []),
                ],
                className="status-block",
            ),
            html.Div(
                id=ids.Shell.VIEW_BANNER, className="view-banner", hidden=True, role="status", **{"aria-live": "polite"}
            ),
        ],
        id=ids.Shell.HEADER,
        className="header",
    )
    return html.Div(
        [
            dcc.Location(id=ids.Shell.LOCATION),
            dcc.Store(id=ids.Shell.SCREEN),
            dcc.Interval(id=ids.Shell.TICK, interval=tick_ms, n_intervals=0),
            dcc.Store(id=ids.Shell.LINK_KEEPER),
            header,
            html.Main(dash.page_container, id=ids.Shell.MAIN, className="main"),
        ],
        className="shell",
    )


def snapshot_age_s(snapshot_ts: datetime | None, now: datetime | None = None) -> float:
    """Seconds since the snapshot time (inf without a snapshot)."""
    if snapshot_ts is None:
        return math.inf
    now = now or datetime.now(UTC)
    return max(0.0, (now - snapshot_ts).total_seconds())


def status_view(snapshot_ts: datetime | None, source_ages_s: dict[str, float], now: datetime | None = None) -> tuple:
    """(clock text, age badges, main-area class) for the header; pure, for tests."""
    age = snapshot_age_s(snapshot_ts, now)
    if snapshot_ts is None:
        clock = "no data yet"
    else:
        clock = f"{snapshot_ts.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC · {format_age(age)} old"
    main_class = "main"
    if age >= DEAD_AFTER_S:
        main_class = "main is-dead"
    elif age >= STALE_AFTER_S:
        main_class = "main is-stale"
    return clock, age_badges(source_ages_s), main_class


def view_status(view, now: datetime | None = None) -> tuple:
    """(clock text, age badges, main-area class) for whichever view is on screen."""
    snapshot = view.latest()
    if view.is_live:
        return status_view(snapshot.ts if snapshot is not None else None, view.source_ages(), now)
    return f"{view.label.split(' · ', 1)[0]} time {view_time(view)}", [], "main"


def banner_view(shown: dict | None) -> tuple:
    """(children, class, hidden) of the view banner for the screen store's data ``shown``."""
    try:
        return banner(screen_for(selection_of(shown), live_view()))
    except ViewUnavailable as exc:
        return unavailable_banner(str(exc))


# The screen store's data for a page URL: its path and the view parameters (strings or null).
# dashboard.views.context.screen_data is the server-side twin; the replay page calls this too.
SCREEN_OF_URL_JS = """function(pathname, search) {
    var params = new URLSearchParams(search || '');
    var shown = {path: pathname || '/'};
    %s.forEach(function(key) { shown[key] = params.get(key); });
    return shown;
}""" % json.dumps(list(VIEW_PARAMS))


# Keeps the view parameters on every in-app link: nav hrefs are rewritten when the URL
# changes, and a click on any other same-origin link without its own view parameters
# navigates (as dcc.Link does) to the link's page with the current ones.
_KEEP_VIEW_JS = """
function(search, navIds) {
    var KEYS = %(keys)s;
    var push = %(push)s;
    function withView(href) {
        var url = new URL(href, window.location.href);
        var current = new URLSearchParams(window.location.search);
        if (KEYS.some(function(k) { return url.searchParams.has(k); })) { return null; }
        var extra = KEYS.filter(function(k) { return current.get(k); });
        if (!extra.length) { return null; }
        var params = new URLSearchParams();
        extra.forEach(function(k) { params.set(k, current.get(k)); });
        url.searchParams.forEach(function(v, k) { params.set(k, v); });
        return url.pathname + '?' + params.toString();
    }
    if (!window.clustertwinKeepsView) {
        window.clustertwinKeepsView = true;
        window.addEventListener('click', function(event) {
            var link = event.target.closest && event.target.closest('a[href]');
            if (!link || link.target || event.button !== 0 || event.metaKey || event.shiftKey ||
                event.altKey || event.ctrlKey || link.origin !== window.location.origin) { return; }
            var href = withView(link.getAttribute('href'));
            if (href === null) { return; }
            event.preventDefault();
            event.stopPropagation();
            push(href);
            window.scrollTo(0, 0);
        }, true);
    }
    var hrefs = navIds.map(function(id) { return withView(id.path) || id.path; });
    return [hrefs, search || ''];
}
""" % {"keys": list(VIEW_PARAMS).__repr__(), "push": PUSH_STATE_JS}


def register_callbacks(app: dash.Dash) -> None:
    """Header status on every tick, the view banner, search, the active nav link and view-keeping links."""
    register_search(app)

    app.clientside_callback(
        SCREEN_OF_URL_JS,
        Output(ids.Shell.SCREEN, "data"),
        Input(ids.Shell.LOCATION, "pathname"),
        Input(ids.Shell.LOCATION, "search"),
    )

    @app.callback(
        Output(ids.Shell.CLOCK, "children"),
        Output(ids.Shell.SOURCE_AGES, "children"),
        Output(ids.Shell.MAIN, "className"),
        Input(ids.Shell.TICK, "n_intervals"),
        Input(ids.Shell.SCREEN, "data"),
    )
    def update_status(_n: int, shown: dict | None):
        if shown is None:  # the store is set from the URL at once; nothing to say before
            raise PreventUpdate
        try:
            view = screen_for(selection_of(shown), live_view()).view
        except ViewUnavailable:
            return "view not available", [], "main"
        return view_status(view)

    @app.callback(
        Output(ids.Shell.VIEW_BANNER, "children"),
        Output(ids.Shell.VIEW_BANNER, "className"),
        Output(ids.Shell.VIEW_BANNER, "hidden"),
        Input(ids.Shell.SCREEN, "data"),
    )
    def update_banner(shown: dict | None):
        if shown is None:
            raise PreventUpdate
        return banner_view(shown)

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

    app.clientside_callback(
        _KEEP_VIEW_JS,
        Output(ids.nav_link(ALL), "href"),
        Output(ids.Shell.LINK_KEEPER, "data"),
        Input(ids.Shell.LOCATION, "search"),
        dash.State(ids.nav_link(ALL), "id"),
    )


__all__ = [
    "PAGES",
    "SCREEN_OF_URL_JS",
    "TICK_MS",
    "banner_view",
    "layout",
    "register_callbacks",
    "status_view",
    "view_status",
]
