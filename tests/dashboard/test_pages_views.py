"""Every page renders any view, and compares two, through the same read interface."""

from __future__ import annotations

import json

import plotly
import pytest

from dashboard import ids
from dashboard.components.view_banner import banner
from dashboard.shell.deep_link import keep_view, query_string
from dashboard.views import compare
from dashboard.views.context import ViewSelection, screen_data
from dashboard.views.registry import screen_for

PAGES = ("overview", "floor", "cooling", "power", "fabric", "jobs", "alerts")
SCENARIO = "scenario:demo-cdu-loss"


def _text(component) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder, ensure_ascii=False)


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize(
    "query",
    [
        {"view": SCENARIO},
        {"view": SCENARIO, "compare": "live"},
        {"view": "live", "compare": SCENARIO, "diff": "1"},
    ],
)
def test_every_page_renders_a_scenario_and_a_comparison(page_module, view_request, demo_view, find, page, query):
    with view_request(demo_view):
        layout = page_module(page).layout(**query)
    text = _text(layout)
    assert "View not available" not in text
    section = find(layout, compare.section_id(page))
    assert (section is not None) == ("compare" in query), page
    if "compare" in query:
        assert "A − B" in _text(section)


@pytest.mark.parametrize("page", PAGES)
def test_an_unknown_view_gives_a_message_not_a_traceback(page_module, view_request, demo_view, find, page):
    with view_request(demo_view):
        layout = page_module(page).layout(view="scenario:no-such-thing")
    message = find(layout, ids.Shell.VIEW_ERROR)
    assert message is not None and "no scenario 'no-such-thing'" in message.children


def test_alerts_on_a_scenario_are_read_only(page_module, view_request, demo_view):
    alerts = page_module("alerts")
    with view_request(demo_view):
        layout = alerts.layout(view=SCENARIO)
        screen = screen_for(ViewSelection(SCENARIO), demo_view)
        message = alerts.apply_action(screen.view, demo_view.actions, ids.alert_ack("x"), 900)
    text = _text(layout)
    assert "read-only" in text and ids.ALERT_ACK not in text
    assert message == "alerts of scenario · CDU loss in rack R01-K01 are read-only"


def test_floor_difference_colouring_is_diverging_around_zero(page_module, demo_view, demo_state):
    floor = page_module("floor")
    screen = screen_for(ViewSelection("live", SCENARIO, True), demo_view)
    figure = floor.floor_view(demo_state, screen.view.latest(), "max_gpu_temp_c", None, floor.diff_against(screen))
    axis = figure.layout.coloraxis
    assert axis.cmin == -axis.cmax and axis.cmax > 0
    assert axis.colorscale[0][1] != axis.colorscale[-1][1] and "A − B" in axis.colorbar.title.text
    values = floor.floor_metrics(demo_state, screen.view.latest(), screen.compare.latest())["max_gpu_temp_c"]
    expected = screen.view.latest().rack_max_gpu_temp_c - screen.compare.latest().rack_max_gpu_temp_c
    assert ((values == expected) | (values != values)).all()


def test_overview_tiles_compare_numbers(page_module, demo_view):
    overview = page_module("overview")
    screen = screen_for(ViewSelection("live", SCENARIO, True), demo_view)
    a = overview.kpi_numbers(demo_view.state, demo_view.latest(), [])["it_power"][0]
    b = overview.kpi_numbers(demo_view.state, screen.compare.latest(), [])["it_power"][0]
    tiles = overview.comparison(screen)[1]
    value = next(t for t in tiles.children if t.__dict__.get("data-kpi") == "it_power").children[1].children[0].children
    assert value == compare.fmt_number(a - b, 1, signed=True)


def test_compare_number_formatting():
    assert compare.fmt_number(1234.56, 1) == "1,234.6"
    assert compare.fmt_number(-0.26, 1, signed=True) == "−0.3"
    assert compare.fmt_number(2.0, 0, signed=True) == "+2"
    assert compare.fmt_number(0.001, 1, signed=True) == "±0.0"
    assert compare.fmt_number(float("nan"), 1) == "–" and compare.fmt_number(None, 1) == "–"
    assert compare.tile_texts(3.0, 1.0, 1, True, "B") == ("+2.0", "A 3.0 · B 1.0")
    assert compare.tile_texts(3.0, 1.0, 1, False, "B") == ("3.0", "B: 1.0 (+2.0)")
    assert list(compare.largest_changes([1.0, 5.0, float("nan"), 2.0], [1.0, 1.0, 0.0, 4.0], 2)) == [1, 3]


def test_banner_names_the_view(demo_view):
    children, cls, hidden = banner(screen_for(ViewSelection(), demo_view))
    assert hidden and children == []
    children, cls, hidden = banner(screen_for(ViewSelection(SCENARIO), demo_view))
    text = _text(children)
    assert not hidden and "view-banner-scenario" in cls
    assert "SCENARIO" in text and "CDU loss in rack R01-K01" in text and "2026-07-15 14:00 UTC" in text
    children, cls, _ = banner(screen_for(ViewSelection("live", SCENARIO), demo_view))
    assert "view-banner-compare" in cls and "show difference" in _text(children)


def test_banner_and_clock_of_the_shell(dash_app, demo_view, view_request):
    from dashboard.shell import frame as shell

    with view_request(demo_view):
        children, cls, hidden = shell.banner_view(screen_data("/floor?view=replay:pump@2026-07-15T14:00:00Z"))
        assert "view-banner-error" in cls and "no such incident 'pump'" in _text(children)
        scenario = screen_for(ViewSelection(SCENARIO), demo_view).view
    clock, badges, main_class = shell.view_status(scenario)
    assert clock == "scenario time 2026-07-15 14:00 UTC" and badges == [] and main_class == "main"


def test_url_writers_keep_the_view():
    assert query_string({"rack": "R1"}, {"view": SCENARIO, "other": "x"}) == "?view=scenario%3Ademo-cdu-loss&rack=R1"
    shown = screen_data(f"/floor?view={SCENARIO}&compare=live")
    assert (
        keep_view("?metric=rack_power_kw", shown) == "?view=scenario%3Ademo-cdu-loss&compare=live&metric=rack_power_kw"
    )
    assert keep_view("", shown) == "?view=scenario%3Ademo-cdu-loss&compare=live"
    assert keep_view("?metric=y", screen_data("/floor?metric=x")) == "?metric=y"
    assert keep_view("?metric=y", None) == "?metric=y"  # no screen known: no view parameters to keep
