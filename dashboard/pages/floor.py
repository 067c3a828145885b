"""``/floor``: hall floor plans (placeholder while the page is built)."""

from __future__ import annotations

import dash
from dash import html

from dashboard import ids

dash.register_page(__name__, path="/floor", name="Floor", title="Floor · ClusterTwin", order=1)


def layout(**kwargs) -> html.Div:
    return html.Div([html.H1("Floor")], id=ids.Floor.HALLS)
