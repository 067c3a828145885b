"""``/``: site overview (placeholder while the page is built)."""

from __future__ import annotations

import dash
from dash import html

from dashboard import ids

dash.register_page(__name__, path="/", name="Overview", title="Overview · ClusterTwin", order=0)


def layout(**kwargs) -> html.Div:
    return html.Div([html.H1("Overview")], id=ids.Overview.KPIS)
