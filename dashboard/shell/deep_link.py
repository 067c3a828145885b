"""Deep links: a page's selection lives in the URL query and is restored from it.

A page keeps its selection (names, not ids, so links survive a site reload) in a
``dcc.Store``.  :func:`register_url_writer` mirrors that store into the address bar
with ``history.replaceState`` in the browser — the Dash pages router does not notice,
so the page is not rebuilt on every click.  The view parameters (``view``, ``compare``,
``diff``: which view is on screen, see :mod:`dashboard.views.context`) stay as they are; a
server callback that writes a page's query keeps them with :func:`keep_view`, given the
shell's screen store.  On load, Dash passes the query to the page's ``layout(**kwargs)``,
which rebuilds the store with :func:`name_index`.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import dash
from dash import Input, Output

from dashboard.views.context import VIEW_PARAMS, selection_of

_WRITE_URL_JS = """
function(selection) {
    if (!selection) { return window.dash_clientside.no_update; }
    var current = new URLSearchParams(window.location.search);
    var params = new URLSearchParams();
    %s.forEach(function(key) { if (current.get(key)) { params.set(key, current.get(key)); } });
    Object.keys(selection).sort().forEach(function(key) {
        var value = selection[key];
        if (value !== null && value !== undefined && value !== '') { params.set(key, value); }
    });
    var query = params.toString();
    var url = window.location.pathname + (query ? '?' + query : '');
    if (url !== window.location.pathname + window.location.search) {
        window.history.replaceState(window.history.state, '', url);
    }
    return query;
}
""" % json.dumps(list(VIEW_PARAMS))


def query_string(selected: dict, view_params: dict | None = None) -> str:
    """``?a=1&b=x`` of the view parameters, then the non-empty entries (sorted), or ``""``.

    The server-side twin of the JS.
    """
    items = [(k, v) for k, v in (view_params or {}).items() if k in VIEW_PARAMS and v]
    items += sorted((k, v) for k, v in selected.items() if v is not None and v != "")
    return "?" + urlencode(items) if items else ""


def keep_view(search: str, shown: dict | None) -> str:
    """``search`` (``?a=1`` or ``""``) with the view parameters of the screen store ``shown`` put first."""
    params = selection_of(shown).params()
    if not params:
        return search
    extra = urlencode(params)
    rest = search.lstrip("?")
    return "?" + extra + ("&" + rest if rest else "")


def name_index(names: list[str], value: str | None) -> int | None:
    """Index of ``value`` in ``names`` (None when absent or empty)."""
    if not value:
        return None
    try:
        return names.index(value)
    except ValueError:
        return None


def register_url_writer(selection_id: str, sync_id: str) -> None:
    """Mirror the selection store ``selection_id`` into the URL (output: store ``sync_id``)."""
    dash.clientside_callback(_WRITE_URL_JS, Output(sync_id, "data"), Input(selection_id, "data"))
