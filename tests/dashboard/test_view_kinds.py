"""A kind of view registered by a test: its keys parse and format, it resolves, and pages, callbacks and
the shell show it, with no edit anywhere else (the fleet views will come in the same way)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import plotly
import pytest
from playwright.sync_api import expect

from dashboard import ids
from dashboard.views.context import ViewSelection, screen_data
from dashboard.views.registry import (
    ViewUnavailable,
    register_view_kind,
    resolve,
    screen_for,
    unregister_resolver,
)
from tests.dashboard.standin_hub import StandinView, synthetic_snapshot
from twin.engine.view import (
    ViewKey,
    ViewKind,
    check_view_name,
    format_view_key,
    parse_view_key,
    unregister_view_kind,
    view_kinds,
)

MIRROR_TS = datetime(2001, 2, 3, 4, 5, tzinfo=UTC)
MIRROR_IT_MW = 7.7  # the demo site draws about 0.9 MW: the mirror's numbers are its own
NOTE = "a mirror of the site, not the live one"


def _text(component) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder, ensure_ascii=False)


@pytest.fixture()
def mirror(demo_state):
    """The kind ``mirror:<name>``: a stand-in view of its own snapshot (stamped MIRROR_TS), registered for the test."""
    resolved: list[ViewKey] = []
    views: dict[str, StandinView] = {}

    def resolver(key: ViewKey, live):
        if key.name == "broken":
            raise ViewUnavailable(f"mirror {key.name!r} is broken")
        resolved.append(key)
        if key.name not in views:
            snap = replace(synthetic_snapshot(demo_state, ts=MIRROR_TS, seed=7), it_power_mw=MIRROR_IT_MW)
            view = StandinView(demo_state, snap)
            view.key, view.label, view.is_live = format_view_key(key), f"mirror · {key.name}", False
            views[key.name] = view
        return views[key.name]

    kind = ViewKind(
        "mirror",
        "mirror:<name>",
        lambda rest, key: ViewKey("mirror", check_view_name(rest, "mirror", key)),
        lambda key: f"mirror:{key.name}",
    )
    register_view_kind(kind, resolver, note=NOTE)
    yield resolved, views
    unregister_resolver("mirror")
    unregister_view_kind("mirror")


def test_its_keys_parse_and_format_and_bad_ones_are_named(mirror):
    assert "mirror" in view_kinds()
    key = parse_view_key("mirror:north")
    assert key == ViewKey("mirror", "north") and format_view_key(key) == "mirror:north"
    with pytest.raises(ValueError, match="'mirror:a/b'.*mirror name"):
        parse_view_key("mirror:a/b")
    with pytest.raises(ValueError, match="'mirrors:x': expected .*'mirror:<name>'"):
        parse_view_key("mirrors:x")


def test_it_resolves_alone_and_compared_with_live(mirror, demo_view):
    resolved, views = mirror
    view = resolve("mirror:north", demo_view)
    assert view is views["north"] and resolved == [ViewKey("mirror", "north")]
    screen = screen_for(ViewSelection("mirror:north", compare="live", diff=True), demo_view)
    assert screen.view is view and screen.compare is demo_view and screen.diff
    with pytest.raises(ViewUnavailable, match="mirror 'broken' is broken"):
        resolve("mirror:broken", demo_view)


def test_without_a_resolver_its_keys_say_the_dashboard_cannot_show_them(mirror, demo_view):
    unregister_resolver("mirror")
    with pytest.raises(ViewUnavailable, match="cannot show mirror views"):
        resolve("mirror:north", demo_view)


def test_pages_lay_it_out_and_the_banner_names_it(mirror, page_module, view_request, demo_view):
    from dashboard.shell import frame as shell

    overview, floor = page_module("overview"), page_module("floor")
    with view_request(demo_view):
        mirrored = overview.tiles_of(resolve("mirror:north", demo_view))
        live = overview.tiles_of(demo_view)
        page = _text(overview.layout(view="mirror:north"))
        floor_page = _text(floor.layout(view="mirror:north"))
        children, cls, hidden = shell.banner_view(screen_data("/floor?view=mirror:north"))
    assert mirrored["it_power"].value == f"{MIRROR_IT_MW:.1f}" != live["it_power"].value
    assert f'"{mirrored["it_power"].value}"' in page and f'"{live["it_power"].value}"' not in page
    assert ids.Shell.VIEW_ERROR not in floor_page and ids.Floor.HALLS in floor_page
    assert not hidden and cls == "view-banner view-banner-mirror"
    assert "MIRROR" in _text(children) and NOTE in _text(children) and "2001-02-03 04:05 UTC" in _text(children)


def test_callbacks_render_it_from_the_screen_store(mirror, dash_app):
    """The shell's clock and the floor's live patch, asked by requests whose screen store names the mirror."""
    client = dash_app.server.test_client()

    def status(url: str) -> str:
        body = {
            "output": f"..{ids.Shell.CLOCK}.children...{ids.Shell.SOURCE_AGES}.children...{ids.Shell.MAIN}.className..",
            "outputs": [
                {"id": ids.Shell.CLOCK, "property": "children"},
                {"id": ids.Shell.SOURCE_AGES, "property": "children"},
                {"id": ids.Shell.MAIN, "property": "className"},
            ],
            "inputs": [
                {"id": ids.Shell.TICK, "property": "n_intervals", "value": 1},
                {"id": ids.Shell.SCREEN, "property": "data", "value": screen_data(url)},
            ],
            "changedPropIds": [f"{ids.Shell.SCREEN}.data"],
        }
        response = client.post("/_dash-update-component", json=body)
        assert response.status_code == 200, response.get_data(as_text=True)
        return response.json["response"][ids.Shell.CLOCK]["children"]

    assert status("/jobs?view=mirror:north") == "mirror time 2001-02-03 04:05 UTC"
    assert status("/jobs") != status("/jobs?view=mirror:north")
    assert status("/jobs?view=mirror:broken") == "view not available"

    def floor_patch(url: str):
        body = {
            "output": f"{ids.Floor.HALLS_LIVE}.data",
            "outputs": {"id": ids.Floor.HALLS_LIVE, "property": "data"},
            "inputs": [{"id": ids.Shell.TICK, "property": "n_intervals", "value": 1}],
            "state": [
                {"id": ids.Floor.METRIC, "property": "value", "value": "max_gpu_temp_c"},
                {"id": ids.Floor.JOB, "property": "data", "value": None},
                {"id": ids.Shell.SCREEN, "property": "data", "value": screen_data(url)},
            ],
            "changedPropIds": [f"{ids.Shell.TICK}.n_intervals"],
        }
        response = client.post("/_dash-update-component", json=body)
        return response.status_code, (response.json or {}).get("response") if response.status_code == 200 else None

    status_code, mirrored = floor_patch("/floor?view=mirror:north")
    assert status_code == 200 and mirrored[ids.Floor.HALLS_LIVE]["data"]["screen"]["view"] == "mirror:north"
    _, live = floor_patch("/floor")
    assert _text(mirrored[ids.Floor.HALLS_LIVE]["data"]["0"]) != _text(live[ids.Floor.HALLS_LIVE]["data"]["0"])
    assert floor_patch("/power?view=mirror:north") == (204, None)  # the floor is no longer on screen


@pytest.mark.browser
def test_a_browser_shows_it_on_a_page(mirror, served_app, new_page, screenshot):
    page, log = new_page("1366x768")
    page.goto(served_app.url("/floor?view=mirror:north"))
    banner = page.locator(f"#{ids.Shell.VIEW_BANNER}")
    expect(banner).to_have_class("view-banner view-banner-mirror")
    expect(banner).to_contain_text(f"MIRROR north · 2001-02-03 04:05 UTC · {NOTE}")
    expect(page.locator(f"#{ids.Shell.CLOCK}")).to_have_text("mirror time 2001-02-03 04:05 UTC")
    expect(page.locator(f"#{ids.Floor.HALLS} .js-plotly-plot")).to_be_visible()
    page.click(".nav-link >> text=Cooling")  # links keep the registered view too
    expect(page.locator("#shell-main h1:text-is('Cooling')")).to_be_visible()
    assert page.evaluate("window.location.search") == "?view=mirror%3Anorth"
    expect(banner).to_contain_text("MIRROR north")
    screenshot(page, "view-registered-kind-cooling")
    assert log.errors == [], log.errors
