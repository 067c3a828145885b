"""KPI cards: a label, a big value with its unit, a sparkline, and a small note underneath."""

from __future__ import annotations

from dash import html

from dashboard import ids
from dashboard.present.formatting import NOT_RECORDED, UNKNOWN


def kpi_card(
    page: str,
    name: str,
    label: str,
    unit: str = "",
    value: str = "–",
    note: str = "",
    status: str = "",
    spark: str = "",
    basis: str = "",
) -> html.Div:
    """One card; value, note and sparkline have pattern ids (``ids.kpi_value/kpi_note/kpi_spark``).

    An unknown value (:data:`dashboard.present.formatting.UNKNOWN`) carries the tooltip "not recorded".
    """
    return html.Div(
        [
            html.Div([label, html.Span(basis, className="kpi-basis")] if basis else label, className="kpi-label"),
            html.Div(
                [
                    html.Span(
                        value,
                        id=ids.kpi_value(page, name),
                        className=f"kpi-value {status}".strip(),
                        **({"title": NOT_RECORDED} if value == UNKNOWN else {}),
                    ),
                    html.Span(unit, className="kpi-unit"),
                    html.Span(spark, id=ids.kpi_spark(page, name), className="kpi-spark", **{"aria-hidden": "true"}),
                ],
                className="kpi-main",
            ),
            html.Div(note, id=ids.kpi_note(page, name), className="kpi-note"),
        ],
        className="kpi",
        **{"data-kpi": name},
    )
