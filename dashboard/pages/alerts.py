"""``/alerts``: alerts (placeholder while the page is built)."""

from __future__ import annotations

import dash
from dash import html

from dashboard import ids

dash.register_page(__name__, path="/alerts", name="Alerts", title="Alerts · ClusterTwin", order=6)


def layout(**kwargs) -> html.Div:
    return html.Div([html.H1("Alerts")], id=ids.Alerts.SUMMARY)
