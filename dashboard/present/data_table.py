"""Plain HTML tables from rows of dicts, with units in the headers (styled by ``table.data``), and the
look of the site's DataTables (:func:`grid_table`).

Small tables (top-N lists) are cheaper as HTML than as a DataTable and print well.  A longer one is
a DataTable: one component however many rows, where an HTML table is one per cell, and the
browser's Dash renderer pays for every component it mounts (about 1 ms each for a page of answers
on colossus: a 100-row, 7-column table took a second to show).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dash import dcc, html
from dash.dash_table.DataTable import DataTable
from dash.dash_table.Format import Format, Group, Scheme

from dashboard.present import theme
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


GRID_STYLE: dict[str, Any] = dict(
    style_table={"overflowX": "auto"},
    style_header={"backgroundColor": theme.PANEL, "color": theme.TEXT, "fontWeight": "600", "border": "none"},
    style_cell={
        "backgroundColor": theme.BACKGROUND,
        "color": theme.TEXT,
        "border": f"1px solid {theme.GRID}",
        "fontFamily": theme.FONT_FAMILY,
        "fontSize": "13px",
        "padding": "4px 8px",
        "whiteSpace": "nowrap",
        "textAlign": "left",
    },
)  # the look of every DataTable of the site (dark theme, one line per row)
_FORMATS = {"{:,}": (0, Scheme.fixed), "{:,.0f}": (0, Scheme.fixed), "{:,.1f}": (1, Scheme.fixed)}


def _grid_column(col: Column) -> dict[str, Any]:
    if col.fmt is None:
        return {"name": col.header, "id": col.key}
    if col.fmt not in _FORMATS:
        raise ValueError(f"grid_table: no DataTable format for {col.fmt!r} (column {col.key!r})")
    decimals, scheme = _FORMATS[col.fmt]
    fmt = Format(precision=decimals, scheme=scheme, group=Group.yes)
    return {"name": col.header, "id": col.key, "type": "numeric", "format": fmt}


def grid_table(
    rows: list[dict],
    columns: tuple[Column, ...],
    empty: str = "nothing to show",
    table_id: str | None = None,
    page_size: int = 15,
) -> DataTable | html.Div:
    """``rows`` as a DataTable sorted and paged in the browser (``page_size`` rows a page); ``empty`` text when
    there are none.  Number columns are right-aligned and formatted as their ``Column.fmt`` says."""
    if not rows:
        return html.Div(empty, className="empty", id=table_id) if table_id else html.Div(empty, className="empty")
    keys = [c.key for c in columns]
    numeric = [{"if": {"column_id": c.key}, "textAlign": "right"} for c in columns if c.fmt]
    props: dict[str, Any] = dict(
        columns=[_grid_column(c) for c in columns],
        data=[{k: _json_cell(r.get(k)) for k in keys} for r in rows],
        sort_action="native",
        page_action="native" if len(rows) > page_size else "none",
        page_size=page_size,
        style_cell_conditional=numeric,
        **GRID_STYLE,
    )
    if table_id:
        props["id"] = table_id
    return DataTable(**props)


def _json_cell(value):
    """A cell as JSON holds it: a non-finite number is an empty cell (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
