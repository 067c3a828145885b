"""Floor page functions, called directly: deep links, click handling, live patch, drill-down."""

from __future__ import annotations

import pytest
from dash import no_update

from dashboard import ids


def test_url_round_trip(page_module):
    floor = page_module("floor")
    assert floor.url_search("rack_power_kw", "H1-R01-K03") == "?metric=rack_power_kw&rack=H1-R01-K03"
    assert floor.url_search("max_gpu_temp_c", None) == "?metric=max_gpu_temp_c"
    assert floor.parse_metric("nonsense") == "max_gpu_temp_c"
    assert floor.parse_metric("job") == "max_gpu_temp_c"  # no fleet: no colouring by job or team


def test_job_and_team_colourings_escape_their_names(page_module, demo_state):
    import numpy as np

    from dashboard.analysis.fleet_floor import FleetFloor

    floor = page_module("floor")
    n = demo_state.n_racks
    zeros = np.zeros(n, np.int64)
    layer = FleetFloor(
        ["<b>t</b>", "free"],
        zeros,
        ["<i>1</i>", "other jobs", "free"],
        zeros,
        [""] * n,
        zeros,
        zeros,
        [""] * n,
        [[] for _ in range(n)],
    )
    assert floor.parse_metric("job", layer) == "job" and floor.parse_metric("team", layer) == "team"
    jobs = floor.fleet_categories("job", layer)
    assert jobs.names == ["&lt;i&gt;1&lt;/i&gt;", "other jobs", "free"] and len(jobs.colours) == 3
    assert floor.fleet_categories("team", layer).names == ["&lt;b&gt;t&lt;/b&gt;", "free"]
    assert floor.fleet_categories("job", layer, against=object()) is None  # A − B is never categorical
    assert floor.fleet_categories("rack_power_kw", layer) is None


def test_layout_restores_metric_and_rack(page_module, demo_view, view_request, find):
    floor = page_module("floor")
    rack = demo_view.state.rack_name[5]
    with view_request(demo_view):
        page = floor.layout(metric="cdu_headroom_kw", rack=rack)
    assert find(page, ids.Floor.METRIC).value == "cdu_headroom_kw"
    assert find(page, ids.Floor.SELECTED_RACK).data == rack
    assert find(page, ids.Floor.RACK_PANEL).className == "rack-panel"
    figure = find(page, ids.Floor.HALLS).figure
    assert "CDU headroom" in figure.layout.coloraxis.colorbar.title.text


def test_unknown_rack_in_url_keeps_the_panel_closed(page_module, demo_view, view_request, find):
    floor = page_module("floor")
    with view_request(demo_view):
        page = floor.layout(rack="NO-SUCH-RACK")
    assert find(page, ids.Floor.SELECTED_RACK).data is None
    assert find(page, ids.Floor.RACK_PANEL).className == "rack-panel hidden"


@pytest.mark.parametrize(
    "point, expected",
    [
        ({"text": "H1-R01-K02"}, "H1-R01-K02"),
        ({"text": "H1-R01-K03 · off<br>team alpha · 64 GPUs allocated"}, "H1-R01-K03"),
        ({"text": "", "customdata": [1, 2, 3, 4, 5, 7]}, "H1-R01-K08"),
        ({"text": ""}, no_update),
    ],
)
def test_clicked_rack_name(page_module, demo_state, point, expected):
    floor = page_module("floor")
    assert demo_state.rack_name[7] == "H1-R01-K08"
    assert floor.clicked_rack_name(demo_state, {"points": [point]}) == expected
    assert floor.clicked_rack_name(demo_state, None) is no_update


def test_live_floor_patch_covers_every_hall(page_module, demo_view):
    floor = page_module("floor")
    ops = floor.floor_update(demo_view, "rack_power_kw").to_plotly_json()["operations"]
    # demo: one hall (trace 0), the selection (1), its off hatch, alert outlines, nodes out and job (2-6)
    assert {(op["location"][1], op["location"][2]) for op in ops} == {
        (0, "z"),
        (0, "customdata"),
        (0, "text"),
        *((i, axis) for i in (2, 3, 4, 5, 6) for axis in ("x", "y")),
    }


def test_drilldown_of_one_rack(page_module, demo_view):
    floor = page_module("floor")
    state = demo_view.state
    out = floor.rack_drilldown(demo_view, 4)
    assert set(out) == set(floor.DRILLDOWN_IDS)
    assert out[ids.Floor.RACK_TITLE] == f"Rack {state.rack_name[4]}"
    table = out[ids.Floor.RACK_GPU_TEMP].children[1]
    cells = [td for tr in table.children[1].children for td in tr.children[1:]]
    assert len(cells) == int((state.gpu_rack == 4).sum())
    units = out[ids.Floor.RACK_ELEVATION].children[1].children
    assert units[-1].className == "rack-unit cdu" and units[0].children[0].children == "slot 7"
    # rack power and node power say what they include
    assert "kW rack input power of" in out[ids.Floor.RACK_SUMMARY]
    assert "PSU input (GPUs, CPUs, memory, NICs, fans)" in floor.RACK_POWER_NOTE
    assert "the node's GPUs only" in units[0].title and " GPUs " in units[0].children[2].children
    feeds = out[ids.Floor.RACK_FEEDS].children[1].children
    assert feeds[0].children[1].children[0].children == state.power_name[state.rack_feed_a[4]]


def test_drilldown_outputs_send_static_parts_as_html(page_module, demo_view):
    floor = page_module("floor")
    state = demo_view.state
    title, summary, parts, history = floor.drilldown_outputs(demo_view, 4)
    assert title == f"Rack {state.rack_name[4]}" and "GPUs" in summary
    assert set(parts) == set(floor.STATIC_PARTS)
    assert parts[ids.Floor.RACK_GPU_TEMP].count("<td") == int((state.gpu_rack == 4).sum())
    assert (
        f'data-dash-link href="/power?element={state.power_name[state.rack_feed_a[4]]}"' in parts[ids.Floor.RACK_FEEDS]
    )
    assert history.layout.height
