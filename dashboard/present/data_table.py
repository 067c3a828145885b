"""Plain HTML tables from rows of dicts, with units in the headers (styled by ``table.data``).

Small tables (top-N lists) are cheaper as HTML than as a DataTable and print well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dash import dcc, html

from dashboard.present.formatting import NOT_RECORDED, UNKNOWN

ROW_CLASS = "row_class"  # a row's optional CSS class (e.g. "row-critical"), not a column


@dataclass(frozen=True)
class Column:
    """One column: row key, header (with unit), number format (None = text), link builder."""

    key: str
    header: str
    fmt: str | None = None  # e.g. "{:,.1f}"
    href: str | None = None  # e.g. "/floor?rack={}" — the cell links there


def _cell(row: dict, col: Column) -> html.Td:
    value = row.get(col.key)
    if value is None:
        return html.Td(UNKNOWN, className="num muted" if col.fmt else "muted")
    if col.fmt and isinstance(value, float) and not math.isfinite(value):  # e.g. N-1 load in a replayed moment
        return html.Td(UNKNOWN, title=NOT_RECORDED, className="num muted")
    text = col.fmt.format(value) if col.fmt else str(value)
    content = dcc.Link(text, href=col.href.format(value)) if col.href else text
    return html.Td(content, className="num" if col.fmt else None)


def data_table(
    rows: list[dict], columns: tuple[Column, ...], empty: str = "nothing to show", table_id: str | None = None
) -> html.Div:
    """A ``table.data`` of ``rows``; ``empty`` text when there are none.  A row's ``row_class`` styles its line."""
    if not rows:
        return html.Div(empty, className="empty", id=table_id) if table_id else html.Div(empty, className="empty")
    head = html.Thead(html.Tr([html.Th(c.header, className="num" if c.fmt else None) for c in columns]))
    body = html.Tbody([html.Tr([_cell(r, c) for c in columns], className=r.get(ROW_CLASS)) for r in rows])
    table = html.Table([head, body], className="data", style={"whiteSpace": "nowrap"})
    scroll = {"overflowX": "auto"}
    return html.Div(table, id=table_id, style=scroll) if table_id else html.Div(table, style=scroll)
