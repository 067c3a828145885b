"""Compare mode: a page shows its view against another, side by side or as a difference.

``?view=A&compare=B`` (``&diff=1`` for the difference A − B).  One mechanism for every
page: a page registers a *comparison builder* with :func:`register`, and its layout puts
:func:`section` at the top; one callback refreshes every section on the live tick, only
when either view has a new snapshot.  Builders use the table and tile helpers here, so
numbers look the same on every page: side by side shows A and B, difference shows
A − B with B for reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from urllib.parse import urlencode

import dash
import numpy as np
from dash import MATCH, Input, Output, State, dcc, html, no_update

from dashboard import ids

Builder = Callable[[object], list]  # (Screen) -> children of the section
_BUILDERS: dict[str, Builder] = {}
SECTION = "compare-section"
SIGNATURE = "compare-signature"


def section_id(page: str) -> dict:
    return {"type": SECTION, "page": page}


def signature_id(page: str) -> dict:
    return {"type": SIGNATURE, "page": page}


def register(page: str, builder: Builder) -> None:
    """``builder(screen)`` renders ``page``'s comparison (called only when ``screen.compare`` is set)."""
    _BUILDERS[page] = builder


def signature(screen) -> list:
    """What a section shows: both keys, the mode and both snapshot times."""

    def ts(view):
        snapshot = view.latest()
        return snapshot.ts.isoformat() if snapshot is not None else None

    return [screen.view.key, screen.compare.key, screen.diff, ts(screen.view), ts(screen.compare)]


def section(page: str, screen) -> html.Div | None:
    """The comparison block of ``page`` (None when nothing is compared)."""
    if screen.compare is None:
        return None
    return html.Div(
        [
            dcc.Store(id=signature_id(page), data=signature(screen)),
            html.Div(_BUILDERS[page](screen), id=section_id(page)),
        ],
        className="compare-section",
    )


# ------------------------------------------------------------------------- numbers
def delta(a, b) -> float:
    """A − B (NaN when either is unknown)."""
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return math.nan
    return a - b if math.isfinite(a) and math.isfinite(b) else math.nan


def fmt_number(value, digits: int = 1, signed: bool = False) -> str:
    """``1,234.5``; ``+1.2``/``−0.3`` when ``signed``; ``–`` when unknown."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "–"
    if not math.isfinite(value):
        return "–"
    text = f"{abs(value) if signed else value:,.{digits}f}"
    if signed:
        zero = float(f"{abs(value):.{digits}f}") == 0.0
        text = ("±" if zero else "+" if value > 0 else "−") + text
    return text


def tile_texts(a, b, digits: int, diff: bool, b_label: str) -> tuple[str, str]:
    """(value, note) of a KPI tile comparing A with B."""
    if diff:
        return fmt_number(delta(a, b), digits, signed=True), f"A {fmt_number(a, digits)} · B {fmt_number(b, digits)}"
    return fmt_number(a, digits), f"{b_label}: {fmt_number(b, digits)} ({fmt_number(delta(a, b), digits, signed=True)})"


def _delta_class(value: float) -> str:
    if not math.isfinite(value) or value == 0:
        return "num"
    return "num delta-up" if value > 0 else "num delta-down"


def header(screen) -> html.Div:
    """Which view is A and which is B, above a comparison."""
    mode = "difference A − B" if screen.diff else "side by side"
    return html.Div(
        [
            html.Strong("A "),
            screen.view.label,
            html.Strong("  ·  B "),
            screen.compare.label,
            html.Span(f"  ·  {mode}", className="compare-note"),
        ],
        className="compare-head",
    )


def numbers_table(rows: list[tuple[str, str, int, float, float]], screen) -> html.Table:
    """Site numbers (label, unit, digits, A, B): columns A, B, A − B (difference mode: A − B first)."""
    head = [html.Th("quantity"), html.Th("unit")]
    cols = ["A", "B", "A − B"] if not screen.diff else ["A − B", "A", "B"]
    head += [html.Th(c, className="num") for c in cols]
    body = []
    for label, unit, digits, a, b in rows:
        d = delta(a, b)
        cells = {
            "A": html.Td(fmt_number(a, digits), className="num"),
            "B": html.Td(fmt_number(b, digits), className="num"),
            "A − B": html.Td(fmt_number(d, digits, signed=True), className=_delta_class(d)),
        }
        body.append(html.Tr([html.Td(label), html.Td(unit, className="muted")] + [cells[c] for c in cols]))
    return html.Table([html.Thead(html.Tr(head)), html.Tbody(body)], className="data compare-table")


def entities_table(
    names: list[str],
    hrefs: list[str | None],
    columns: list[tuple[str, int, np.ndarray, np.ndarray]],
    screen,
    entity: str = "rack",
) -> html.Table:
    """One row per entity; per column (label, digits, A values, B values) the A, B and A − B cells."""
    head = [html.Th(entity)]
    for label, *_ in columns:
        head += [
            html.Th(f"{label} A", className="num"),
            html.Th("B", className="num"),
            html.Th("A − B", className="num"),
        ]
    body = []
    for i, name in enumerate(names):
        cells = [html.Td(dcc.Link(name, href=hrefs[i]) if hrefs[i] else name)]
        for _, digits, a, b in columns:
            d = delta(a[i], b[i])
            cells += [
                html.Td(fmt_number(a[i], digits), className="num"),
                html.Td(fmt_number(b[i], digits), className="num"),
                html.Td(fmt_number(d, digits, signed=True), className=_delta_class(d)),
            ]
        body.append(html.Tr(cells))
    return html.Table([html.Thead(html.Tr(head)), html.Tbody(body)], className="data compare-table")


def largest_changes(a: np.ndarray, b: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` largest |A − B| (finite only), largest first."""
    d = np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
    finite = np.flatnonzero(np.isfinite(d))
    return finite[np.argsort(-d[finite], kind="stable")[:count]]


def toggle_href(screen) -> str:
    """The query switching between side by side and difference."""
    params = screen.selection.params()
    params.pop("diff", None)
    if not screen.diff:
        params["diff"] = "1"
    return "?" + urlencode(params)


# ------------------------------------------------------------------------ callback
def refresh_section(drawn: list | None, page: str, shown: dict | None):
    """(children, signature) of ``page``'s comparison on the screen ``shown`` (the shell's screen store) now,
    or no_update while both views are unchanged (``drawn``: the signature on screen)."""
    from dashboard.views.context import live_view, selection_of
    from dashboard.views.registry import ViewUnavailable, screen_for

    if shown is None:
        return no_update, no_update
    try:
        screen = screen_for(selection_of(shown), live_view())
    except ViewUnavailable:
        return no_update, no_update
    if screen.compare is None or signature(screen) == drawn:
        return no_update, no_update
    return _BUILDERS[page](screen), signature(screen)


def register_callbacks(app: dash.Dash) -> None:
    """The one callback refreshing every page's comparison on the live tick."""

    @app.callback(
        Output(section_id(MATCH), "children"),
        Output(signature_id(MATCH), "data"),
        Input(ids.Shell.TICK, "n_intervals"),
        State(signature_id(MATCH), "data"),
        State(signature_id(MATCH), "id"),
        State(ids.Shell.SCREEN, "data"),
        prevent_initial_call=True,
    )
    def refresh(_n, drawn, store_id, shown):
        return refresh_section(drawn, store_id["page"], shown)
