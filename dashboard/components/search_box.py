"""The header search box (Ctrl-K): suggestions from :class:`dashboard.shell.search.SearchIndex` as links.

The index is built once per site (cached by the site's tables object); job names come
from the view on screen at each query.  Keyboard handling (Ctrl-K / Cmd-K focuses,
Enter opens the first hit, Escape clears) lives in ``assets/search.js``; the links keep
the view parameters through the shell's link handler.
"""

from __future__ import annotations

import threading

import dash
from dash import Input, Output, State, dcc, html

from dashboard import ids
from dashboard.shell.search import MAX_QUERY_CHARS, SearchIndex
from dashboard.views.context import live_view, selection_of
from dashboard.views.registry import ViewUnavailable, screen_for
from twin.site.tables import SiteTables

INPUT_ID = "shell-search"
RESULTS_ID = "shell-search-results"
NO_MATCH = "no match"

_indexes: dict[int, tuple[SiteTables, SearchIndex]] = {}
_lock = threading.Lock()


def index_for(state: SiteTables) -> SearchIndex:
    """The search index of ``state``, built on first use and kept for the life of the process."""
    with _lock:
        cached = _indexes.get(id(state))
        if cached is None or cached[0] is not state:
            cached = (state, SearchIndex(state))
            _indexes[id(state)] = cached
        return cached[1]


def search_box() -> html.Div:
    """The input and its (initially empty) suggestion list."""
    return html.Div(
        [
            dcc.Input(
                id=INPUT_ID,
                type="search",
                placeholder="Search  (Ctrl-K)",
                debounce=False,
                maxLength=MAX_QUERY_CHARS,
                autoComplete="off",
                className="search-input",
                name="search",
            ),
            html.Ul(id=RESULTS_ID, className="search-results", hidden=True, role="listbox"),
        ],
        className="search-block",
        title="Search racks, hosts, GPUs, CDUs, power elements, switches, jobs",
        role="search",
    )


def suggestions(index: SearchIndex, query: str | None, jobs: list[str]) -> tuple[list, bool]:
    """(list items, hidden) for ``query``: hit links, "no match", or hidden when the query is blank."""
    if not (query or "").strip():
        return [], True
    hits = index.find(query, jobs=jobs)
    if not hits:
        return [html.Li(NO_MATCH, className="search-empty")], False
    return [
        html.Li(
            dcc.Link(
                [html.Span(hit.label.split(" ", 1)[0], className="search-kind"), hit.name],
                href=hit.href,
                className="search-hit",
            )
        )
        for hit in hits
    ], False


def register_callbacks(app: dash.Dash) -> None:
    """Suggestions follow the typed text."""

    @app.callback(
        Output(RESULTS_ID, "children"),
        Output(RESULTS_ID, "hidden"),
        Input(INPUT_ID, "value"),
        State(ids.Shell.SCREEN, "data"),
        prevent_initial_call=True,
    )
    def update_suggestions(query: str | None, shown: dict | None):
        live = live_view()
        try:
            snapshot = screen_for(selection_of(shown), live).view.latest()
        except ViewUnavailable:
            snapshot = None
        jobs = [job.name for job in snapshot.jobs] if snapshot is not None else []
        return suggestions(index_for(live.state), query, jobs)
