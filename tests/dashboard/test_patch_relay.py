"""Figure updates relayed through a store: what the server sends, and the clientside callback a relay registers."""

from __future__ import annotations

import json

import plotly
import pytest
from dash import Patch, no_update

from dashboard.callbacks.patch_relay import SCREEN_KEY, PatchRelay
from dashboard.views.context import screen_data

SHOWN = screen_data("/floor?view=scenario:demo-cdu-loss")


def _relay() -> PatchRelay:
    return PatchRelay("page-figures", (("page-a", "figure"), ("page-b", "figure")))


def test_send_keys_values_by_position_and_leaves_out_no_update():
    patch = Patch()
    patch["data"][0]["z"] = [1, 2]
    sent = _relay().send(SHOWN, no_update, patch)
    assert list(sent) == ["1", SCREEN_KEY]
    assert sent[SCREEN_KEY] == {"path": "/floor", "view": "scenario:demo-cdu-loss", "compare": None, "diff": None}
    wire = json.loads(json.dumps(sent, cls=plotly.utils.PlotlyJSONEncoder))
    assert "__dash_patch_update" not in wire  # plain data for the store: Dash applies no patch to it
    assert wire["1"]["__dash_patch_update"] and wire["1"]["operations"][0]["location"] == ["data", 0, "z"]


def test_nothing_to_send_leaves_the_store_alone():
    assert _relay().send(SHOWN, no_update, no_update) is no_update


def test_a_wrong_number_of_values_is_refused():
    with pytest.raises(ValueError, match="feeds 2 outputs, got 1"):
        _relay().send(SHOWN, {"data": []})


def test_every_relay_store_feeds_its_figures_from_the_browser(dash_app):
    """Each relay store of the pages has one clientside callback writing its figures, and one server callback writing it."""
    from dashboard import ids

    client = dash_app.server.test_client()
    dependencies = json.loads(client.get("/_dash-dependencies").get_data(as_text=True))
    stores = (
        ids.Floor.HALLS_LIVE,
        ids.Floor.HALLS_SELECTION,
        ids.Overview.TRENDS_LIVE,
        ids.Overview.TRENDS_PIN,
        ids.Jobs.FIGURES,
        ids.Fabric.FIGURES,
        ids.Power.FIGURES,
        ids.Cooling.FIGURES,
    )
    for store in stores:
        readers = [d for d in dependencies if d["inputs"] == [{"id": store, "property": "data"}]]
        assert len(readers) == 1 and readers[0]["clientside_function"], store
        assert readers[0]["state"] == [{"id": ids.Shell.SCREEN, "property": "data"}], store  # checks the screen
        assert readers[0]["prevent_initial_call"] and ".figure@" in readers[0]["output"], store
        writers = [d for d in dependencies if f"{store}.data" in d["output"]]
        assert len(writers) == 1 and not writers[0]["clientside_function"], store


def test_relay_is_a_store_output_and_a_store():
    made = _relay()
    assert (made.output.component_id, made.output.component_property) == ("page-figures", "data")
    assert made.store().id == "page-figures"
