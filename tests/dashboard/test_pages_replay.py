"""Every page in the replay view: the recorded job on /jobs, and no unknown value printed as nan or inf."""

from __future__ import annotations

import json
import re

import plotly
import pytest

from dashboard import ids

PAGES = ("overview", "floor", "cooling", "power", "fabric", "jobs", "alerts", "cdu")
REPLAY = "replay:colossus-cdu-pump-failure@2024-07-22T15:01:50Z"  # rack H1-R01-K01 throttling


def _text(component) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder, ensure_ascii=False)


@pytest.mark.parametrize("page", PAGES)
def test_no_page_prints_an_unknown_value_as_nan_or_inf(page_module, hub_request, demo_hub, page):
    with hub_request(demo_hub):
        layout = page_module(page).layout(view=REPLAY)
    text = _text(layout)
    assert "View not available" not in text
    shown = re.findall(r'"(?:children|value|title)": "([^"]*)"', text)
    bad = [s for s in shown if re.search(r"\b(nan|inf)\b", s, re.I)]
    assert bad == [], page


def test_unknown_values_are_a_dash_saying_not_recorded(page_module, hub_request, demo_hub, find):
    with hub_request(demo_hub):
        layout = page_module("power").layout(view=REPLAY)
    text = _text(layout)
    assert '"title": "not recorded"' in text
    swing = find(layout, ids.kpi_value(ids.Power.PAGE, "swing"))
    assert swing is not None and swing.children == "–" and swing.title == "not recorded"
