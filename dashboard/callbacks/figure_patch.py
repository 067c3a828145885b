"""Partial figure updates: a ``dash.Patch`` carrying only the arrays that change per tick.

Live pages build the new figure with the same pure builder as the first render, then
send only the named trace fields (and the title).  Layout — and with it zoom, pan and
``uirevision`` — stays as the browser has it.  Builders keep the number and order of
traces fixed for a given selection (empty traces rather than missing ones), so trace
indices stay valid between a full render and its patches.
"""

from __future__ import annotations

import plotly.graph_objects as go
from dash import Patch


def _field(fig: go.Figure | dict, index: int, name: str):
    """Trace ``index``'s field ``name`` (dotted path), None when unset."""
    if isinstance(fig, go.Figure):
        value = fig.data[index][name]
        return value.to_plotly_json() if hasattr(value, "to_plotly_json") else value
    obj = fig["data"][index]
    for part in name.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _title(fig: go.Figure | dict) -> str | None:
    if isinstance(fig, go.Figure):
        return fig.layout.title.text
    title = fig.get("layout", {}).get("title")
    return title.get("text") if isinstance(title, dict) else None


def figure_patch(fig: go.Figure | dict, fields: dict[int, tuple[str, ...]] | None = None, title: bool = True) -> Patch:
    """A Patch setting ``fields`` (trace index → dotted field names) of ``fig``'s traces.

    ``fields=None`` replaces every trace whole (layout untouched).  With ``title`` the
    layout title text is sent too (titles carry live counts).
    """
    patch = Patch()
    if fields is None:
        patch["data"] = [t.to_plotly_json() for t in fig.data] if isinstance(fig, go.Figure) else fig["data"]
    else:
        for index, names in fields.items():
            for name in names:
                target = patch["data"][index]
                parts = name.split(".")
                for part in parts[:-1]:
                    target = target[part]
                target[parts[-1]] = _field(fig, index, name)
    if title:
        text = _title(fig)
        if text is not None:
            patch["layout"]["title"]["text"] = text
    return patch


def rendered_record(ts_iso: str, selection: dict, view_params: dict | None = None, **extra) -> dict:
    """The page's record of what is on screen: the snapshot time, the selection, the view parameters (and ``extra``)."""
    return {"ts": ts_iso, "selection": selection, "view": dict(view_params or {}), **extra}


def render_mode(rendered: dict | None, ts_iso: str, selection: dict, view_params: dict | None = None) -> str:
    """What a live callback should send: ``"skip"``, ``"patch"`` or ``"full"``.

    ``rendered`` is the page's record of what is on screen (:func:`rendered_record`):
    nothing new → skip; a new snapshot for the same selection → patch the data; a new
    selection, another view (``view_params``: the view parameters of the screen, see
    :meth:`dashboard.views.context.ViewSelection.params`) or nothing on screen yet →
    rebuild the figures.  A record of another view is what a late answer for the page
    that was replaced by this one (same page, same component ids, another view) leaves:
    the next tick renders this view's figures whole.
    """
    if rendered is None or rendered.get("selection") != selection or rendered.get("view", {}) != (view_params or {}):
        return "full"
    return "skip" if rendered.get("ts") == ts_iso else "patch"


def live_render(view, rendered: dict | None, selection: dict | None, view_params: dict | None = None):
    """``(tick, selection, full, record)`` for a page's live callback, or PreventUpdate when nothing is new.

    ``tick`` is the view's :class:`twin.engine.view.ViewTick` (snapshot and detail read together).
    ``full`` is True when the figures must be rebuilt (new selection or view, nothing on
    screen) and False when only the data changed (see :func:`render_mode`); ``record`` is
    the page's new record of what is on screen (:func:`rendered_record`).
    """
    from dash.exceptions import PreventUpdate

    tick = view.latest_tick()
    if tick.snapshot is None:
        raise PreventUpdate
    selection = selection or {}
    ts_iso = tick.snapshot.ts.isoformat()
    mode = render_mode(rendered, ts_iso, selection, view_params)
    if mode == "skip":
        raise PreventUpdate
    return tick, selection, mode == "full", rendered_record(ts_iso, selection, view_params)
