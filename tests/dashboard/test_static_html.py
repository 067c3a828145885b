"""Dash components rendered to static HTML: tags, attributes, escaping, links; behaviour refused."""

from __future__ import annotations

import numpy as np
import pytest
from dash import dcc, html

from dashboard.components.rack_views import gpu_grid_view
from dashboard.present.static_html import to_html


def test_tags_attributes_and_style():
    node = html.Div(
        [html.Span("a", className="x"), html.Br(), 3], id="d", title="t", style={"fontSize": "10px", "color": "red"}
    )
    assert (
        to_html(node) == '<div id="d" style="font-size: 10px; color: red" title="t"><span class="x">a</span><br>3</div>'
    )
    assert to_html(html.Label("l", htmlFor="i")) == '<label for="i">l</label>'
    assert to_html([None, "x", html.Td()]) == "x<td></td>"


def test_text_and_attributes_are_escaped():
    node = html.Td('<script>"&', title='a"<b>', className="c")
    assert to_html(node) == '<td class="c" title="a&quot;&lt;b&gt;">&lt;script&gt;"&amp;</td>'


def test_links_become_in_app_anchors():
    assert (
        to_html(dcc.Link("P&1", href="/power?element=a&b=c"))
        == '<a data-dash-link href="/power?element=a&amp;b=c">P&amp;1</a>'
    )


def test_components_with_behaviour_are_refused():
    with pytest.raises(ValueError):
        to_html(html.Div(dcc.Graph(id="g")))
    with pytest.raises(ValueError):
        to_html(html.Button("b", n_clicks=0))


def test_gpu_grid_renders_one_cell_per_gpu():
    grid = np.array([[50.0, 60.0], [np.nan, 70.0]])
    notes = np.array([["", "XID 79"], ["", ""]])
    markup = to_html(gpu_grid_view(grid, ["a", "b"], "GPU temperature", "°C", (25, 87), annotations=notes))
    assert markup.count("<td") == 4 and '<table class="gpu-grid">' in markup
    assert '<span class="note">XID 79</span>' in markup and "GPU temperature [°C]" in markup
