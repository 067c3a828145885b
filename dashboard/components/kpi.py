"""KPI cards: a label, a big value with its unit, and a small note underneath."""

from __future__ import annotations

from dash import html

from dashboard import ids
def kpi_card(page: str, name: str, label: str, unit: str = "", value: str = "–", note: str = "", status: str = "") -> html.Div:
    """One card; the value span has the pattern id ``ids.kpi_value(page, name)`` and the status class."""
    return html.Div(
        [
            html.Div(label, className="kpi-label"),
            html.Div(
                [
                    html.Span(value, id=ids.kpi_value(page, name), className=f"kpi-value {status}".strip()),
                    html.Span(unit, className="kpi-unit"),
                ],
                className="kpi-main",
            ),
            html.Div(note, className="kpi-note"),
        ],
        className="kpi",
        **{"data-kpi": name},
    )
