"""Cooling, power, fabric and jobs pages as plain functions: views, patches, deep links, render decisions."""

from __future__ import annotations

import json

import numpy as np
import plotly
import plotly.graph_objects as go
import pytest
from dash import Patch, dcc

from dashboard import ids
from dashboard.callbacks.figure_patch import figure_patch, render_mode
from dashboard.shell.deep_link import name_index, query_string
from dashboard.views.context import LIVE_VIEW_KEY
from tests.dashboard import page_snapshots


def _find(component, component_id):
    """The component with ``component_id`` in a layout tree (None if absent)."""
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        if child is not None and not isinstance(child, (str, int, float)):
            found = _find(child, component_id)
            if found is not None:
                return found
    return None


def _json_bytes(value) -> int:
    return len(json.dumps(value, cls=plotly.utils.PlotlyJSONEncoder))


@pytest.fixture(scope="module")
def colossus():
    state = page_snapshots.site("colossus")
    return state, page_snapshots.snapshot(state, seed=11)


@pytest.fixture()
def in_app(dash_app):
    """An app context of the demo app, so layouts find its live view."""
    with dash_app.server.app_context():
        yield dash_app.server.config


def test_figure_patch_carries_only_named_fields():
    fig = go.Figure(go.Bar(x=[1, 2], y=[3, 4], marker_color=["red", "blue"]), layout=dict(title="t", height=300))
    ops = figure_patch(fig, {0: ("y", "marker.color")}).to_plotly_json()["operations"]
    assert [op["location"] for op in ops] == [
        ["data", 0, "y"],
        ["data", 0, "marker", "color"],
        ["layout", "title", "text"],
    ]
    whole = figure_patch(fig, None, title=False).to_plotly_json()["operations"]
    assert [op["location"] for op in whole] == [["data"]]


def test_render_mode():
    sel = {"loop": None}
    assert render_mode(None, "t1", sel) == "full"
    assert render_mode({"ts": "t1", "selection": sel}, "t1", sel) == "skip"
    assert render_mode({"ts": "t1", "selection": sel}, "t2", sel) == "patch"
    assert render_mode({"ts": "t1", "selection": sel}, "t1", {"loop": "FW-H1"}) == "full"


def test_query_string_and_name_index():
    assert query_string({"b": "x y", "a": 1, "c": None, "d": ""}) == "?a=1&b=x+y"
    assert query_string({"a": None}) == ""
    assert name_index(["p", "q"], "q") == 1
    assert name_index(["p", "q"], "r") is None and name_index(["p"], None) is None


@pytest.mark.slow
def test_live_patches_are_small_at_colossus_scale(page_module, colossus):
    state, snap = colossus
    cooling, power, fabric, jobs = (page_module(n) for n in ("cooling", "power", "fabric", "jobs"))
    views = {
        "cooling": (cooling.cooling_view(state, snap, None), cooling.cooling_view(state, snap, None, full=False)),
        "power": (
            power.power_view(state, snap, None, "power_n1_load_frac"),
            power.power_view(state, snap, None, "power_n1_load_frac", full=False),
        ),
        "fabric": (fabric.fabric_view(state, snap, 0, 3), fabric.fabric_view(state, snap, 0, 3, full=False)),
        "jobs": (
            jobs.jobs_view(state, snap, None, None),
            jobs.jobs_view(
                state, snap, None, None, full=False, shown_placement=jobs.figs.placement_key(state, snap.jobs[0])
            ),
        ),
    }
    for page, (full, patch) in views.items():
        assert any(isinstance(v, go.Figure) for v in full), page
        assert any(isinstance(v, Patch) for v in patch) and not any(isinstance(v, go.Figure) for v in patch), page
        assert _json_bytes(list(patch)) <= 300_000, page
    fabric_full, fabric_patch = views["fabric"]
    assert _json_bytes(fabric_patch[0]) * 2 < _json_bytes(fabric_full[0])  # the matrix patch sends z, not every name
    jobs_full, jobs_patch = views["jobs"]
    assert _json_bytes(jobs_patch[0]) * 10 < _json_bytes(jobs_full[0])  # same placement: only bottleneck racks


def test_cooling_layout_restores_loop_from_url(in_app, page_module):
    cooling = page_module("cooling")
    view = in_app[LIVE_VIEW_KEY]
    name = view.state.loop_name[0]
    page = cooling.layout(loop=name)
    assert _find(page, ids.Cooling.SELECTION).data == {"loop": name}
    assert _find(page, ids.Cooling.LOOP).value == name
    assert name in _find(page, ids.cooling_flow_graph(name)).figure.layout.title.text
    unknown = cooling.layout(loop="no-such-loop")
    assert _find(unknown, ids.Cooling.SELECTION).data == {"loop": None}


def test_cooling_uses_twin_failure_scenarios(page_module):
    cooling = page_module("cooling")
    state, snap, detail = page_snapshots.engine_snapshot("demo")
    scenarios = cooling.throttle_scenarios(snap, detail)
    assert list(scenarios) == [label for _, label in cooling.SCENARIOS]
    assert list(cooling.throttle_scenarios(snap)) == ["loss of one CDU pump"]
    fig = cooling.cooling_view(state, snap, None, detail=detail)[3]
    assert len(fig.data) == 4


def test_power_layout_restores_element_and_metric(in_app, page_module):
    power = page_module("power")
    view = in_app[LIVE_VIEW_KEY]
    ups = int(np.flatnonzero(view.state.power_kind == 2)[0])
    name = view.state.power_name[ups]
    page = power.layout(element=name, metric="load_frac")
    assert _find(page, ids.Power.SELECTION).data == {"element": name, "metric": "load_frac", "source": None}
    assert name in _find(page, ids.Power.TREE).figure.layout.title.text
    assert _find(page, ids.Power.RESET).disabled is False
    default = power.layout(metric="bogus")
    assert _find(default, ids.Power.SELECTION).data == {"element": None, "metric": "power_n1_load_frac", "source": None}
    source = view.state.source_name[0]
    assert _find(power.layout(source=source), ids.Power.SELECTION).data["source"] == source  # /power?source=


def test_fabric_layout_restores_tier_and_switch(in_app, page_module):
    fabric = page_module("fabric")
    view = in_app[LIVE_VIEW_KEY]
    spine = int(np.flatnonzero(view.state.switch_tier == 1)[0])
    page = fabric.layout(tier="spine", switch=view.state.switch_name[spine])
    assert _find(page, ids.Fabric.SELECTION).data == {"tier": "spine", "switch": view.state.switch_name[spine]}
    assert _find(page, ids.Fabric.DETAIL_PANEL).style == {}
    assert view.state.switch_name[spine] in _find(page, ids.Fabric.DETAIL).figure.layout.title.text
    plain = fabric.layout()
    assert _find(plain, ids.Fabric.DETAIL_PANEL).style == {"display": "none"}
    assert _find(plain, ids.Fabric.SELECTION).data["tier"] == "leaf"


def test_jobs_layout_falls_back_to_the_largest_job(in_app, page_module):
    jobs = page_module("jobs")
    view = in_app[LIVE_VIEW_KEY]
    rack = view.state.rack_name[2]
    page = jobs.layout(job="no-such-job", rack=rack)
    largest = max(view.latest().jobs, key=lambda j: j.gpu_ids.size).name
    assert _find(page, ids.Jobs.SELECTION).data == {"job": largest, "rack": rack}
    placement = _find(page, ids.Jobs.PLACEMENT).figure
    assert placement.data[-1].name == "selected"


def test_jobs_view_without_jobs(page_module):
    jobs = page_module("jobs")
    state = page_snapshots.site("demo")
    snap = page_snapshots.snapshot(state)
    snap.jobs = []
    placement, breakdown, table, cards, key = jobs.jobs_view(state, snap, None, None)
    assert placement == {} and key is None
    assert isinstance(table.children, str) and "no training job" in table.children


def test_every_page_graph_has_a_figure(in_app, page_module):
    for name in ("cooling", "power", "fabric", "jobs"):
        page = page_module(name).layout()
        graphs = []

        def walk(c, graphs=graphs):
            if isinstance(c, dcc.Graph):
                graphs.append(c)
            kids = getattr(c, "children", None)
            for k in kids if isinstance(kids, (list, tuple)) else [kids]:
                if k is not None and not isinstance(k, (str, int, float)):
                    walk(k)

        walk(page)
        assert graphs, name
        for g in graphs:
            if g.id == ids.Fabric.DETAIL:
                continue  # hidden until a switch is chosen
            assert isinstance(g.figure, go.Figure) and g.figure.data, (name, g.id)


def test_clicked_custom_normalises_plotly_shapes():
    from dashboard.callbacks.click_data import clicked_custom

    assert clicked_custom({"points": [{"customdata": {"0": 40, "1": 64}}]}) == [40, 64]
    assert clicked_custom({"points": [{"customdata": ["p3", "x"]}]}) == ["p3", "x"]
    assert clicked_custom({"points": [{"customdata": 7}]}) == [7]
    assert clicked_custom({"points": [{}]}) is None and clicked_custom(None) is None


def test_layouts_before_the_first_snapshot(dash_app, page_module):
    from types import SimpleNamespace

    from dashboard.views.context import LIVE_VIEW_KEY

    real = dash_app.server.config[LIVE_VIEW_KEY]
    from twin.engine.view import EMPTY_TICK

    empty = SimpleNamespace(
        state=real.state,
        site_name=real.site_name,
        key="live",
        label="live",
        is_live=True,
        latest=lambda: None,
        latest_tick=lambda: EMPTY_TICK,
        trend=lambda window_s=900.0: real.trend(window_s).iloc[0:0],
    )
    dash_app.server.config[LIVE_VIEW_KEY] = empty
    try:
        with dash_app.server.app_context():
            for name, rendered_id in (
                ("cooling", ids.Cooling.RENDERED),
                ("power", ids.Power.RENDERED),
                ("fabric", ids.Fabric.RENDERED),
                ("jobs", ids.Jobs.RENDERED),
            ):
                page = page_module(name).layout()
                assert _find(page, rendered_id).data is None, name  # the first tick renders in full
    finally:
        dash_app.server.config[LIVE_VIEW_KEY] = real
