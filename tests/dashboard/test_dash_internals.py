"""The private Dash API the dashboard relies on (all of it in dashboard/callbacks/dash_internals.py) is still there."""

from __future__ import annotations

from pathlib import Path

import dash
import pytest

from dashboard.callbacks import dash_internals


def test_private_callback_registries_exist_with_their_types(dash_app):
    assert dash_internals.internals_problems(dash_app) == []


def test_adopting_moves_global_callbacks_into_one_app(demo_state):
    from tests.dashboard.standin_hub import StandinView, standin_app

    app = standin_app(StandinView(demo_state))
    assert app._callback_list and app.callback_map  # the pages' callbacks are this app's now
    from dash import _callback

    assert not _callback.GLOBAL_CALLBACK_LIST and not _callback.GLOBAL_CALLBACK_MAP
    assert any("clustertwinKeepsView" in script for script in app._inline_scripts)


def test_location_still_listens_for_the_push_state_event():
    bundle = Path(dash.__file__).parent / "dcc" / "dash_core_components.js"
    assert dash_internals.PUSH_STATE_EVENT in bundle.read_text(encoding="utf-8")


@pytest.mark.browser
def test_push_state_updates_the_location_in_a_browser(served_app, new_page):
    page, console = new_page()
    page.goto(served_app.url("/"))
    page.wait_for_selector("#" + "overview-kpis .kpi")
    page.evaluate(f"({dash_internals.PUSH_STATE_JS})('/floor')")
    page.wait_for_selector(".page-floor")  # the pages router saw the Location change
    assert page.evaluate("window.location.pathname") == "/floor", page.url
    assert not console.errors, console.errors
