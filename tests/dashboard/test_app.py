"""The app factory: several apps in one process each get their own callbacks and clientside scripts."""

from __future__ import annotations

import json

import pytest

from tests.dashboard.standin_hub import StandinView, standin_app


def _index_and_dependencies(app) -> tuple[str, list]:
    client = app.server.test_client()
    index = client.get("/").get_data(as_text=True)
    return index, json.loads(client.get("/_dash-dependencies").get_data(as_text=True))


@pytest.mark.slow
def test_two_apps_created_back_to_back_both_get_everything(demo_state, dash_app):
    first = standin_app(StandinView(demo_state))
    second = standin_app(StandinView(demo_state))
    index_1, deps_1 = _index_and_dependencies(first)
    index_2, deps_2 = _index_and_dependencies(second)
    outputs_1 = sorted(d["output"] for d in deps_1)
    assert outputs_1 == sorted(d["output"] for d in deps_2)
    assert len(outputs_1) == len(set(outputs_1)), "a callback was registered twice"
    assert any("floor-halls.figure" in o for o in outputs_1) and any("alerts-summary" in o for o in outputs_1)
    assert index_1.count("dash_clientside") == index_2.count("dash_clientside") > 0


def test_no_external_urls_in_the_index(dash_app):
    index, _ = _index_and_dependencies(dash_app)
    assert "cdn" not in index.lower() and "https://" not in index
