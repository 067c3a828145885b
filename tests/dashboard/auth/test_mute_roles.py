"""The alerts page's silences and maintenance windows, through crafted callback requests: a viewer's are
refused (403) and change nothing, an operator's are stored and audited under their name."""

from __future__ import annotations

import json

import pytest

from dashboard import ids
from dashboard.views.context import screen_data
from ingest.store.audit import list_entries
from tests.dashboard.auth.test_callback_roles import CallGraph, server_callbacks, store_writers, writes_to_store

OUTPUT = f"{ids.AlertMutes.RESULT}.children"


def mute_body(end_id: int | None = None, scope_value: str = "H1") -> dict:
    """The request the panel sends for "add" (a hall silence of 1 h), or for the end button of ``end_id``."""
    form = [
        (ids.AlertMutes.KIND, "silence"),
        (ids.AlertMutes.SCOPE_KIND, "hall"),
        (ids.AlertMutes.SCOPE_VALUE, scope_value),
        (ids.AlertMutes.RULE, ""),
        (ids.AlertMutes.START, None),
        (ids.AlertMutes.DURATION, 3600),
        (ids.AlertMutes.COMMENT, "pump swap"),
    ]
    end = ids.mute_end(end_id) if end_id is not None else None
    return {
        "output": OUTPUT,
        "outputs": {"id": ids.AlertMutes.RESULT, "property": "children"},
        "inputs": [
            {"id": ids.AlertMutes.ADD, "property": "n_clicks", "value": 0 if end else 1},
            [{"id": end, "property": "n_clicks", "value": 1}] if end else [],
        ],
        "state": [{"id": i, "property": "value", "value": v} for i, v in form]
        + [{"id": ids.Shell.SCREEN, "property": "data", "value": screen_data("/alerts")}],
        "changedPropIds": [
            (json.dumps(end, separators=(",", ":"), sort_keys=True) if end else ids.AlertMutes.ADD) + ".n_clicks"
        ],
    }


def _message(response) -> str:
    return response.json["response"][ids.AlertMutes.RESULT]["children"]


@pytest.mark.slow
def test_the_panels_callback_is_a_guarded_writer(auth_app):
    writers, graph = store_writers(), CallGraph.build()
    assert {"add_mute", "expire_mute"} <= writers
    writing = [key for key, func in server_callbacks(auth_app).items() if writes_to_store(func, graph, writers)]
    assert any(OUTPUT in key for key in writing)


@pytest.mark.slow
def test_a_viewer_cannot_add_or_end_and_an_operator_can(auth_app, client, live_twin):
    viewer, operator = client(), client()
    viewer.login("vera")
    refused = viewer.callback(mute_body())
    assert refused.status_code == 403 and "needs the operator role" in refused.json["error"]
    assert live_twin.alert_actions.mutes() == []
    operator.login("otto")
    added = operator.callback(mute_body())
    assert added.status_code == 200 and _message(added).startswith("silenced H1 until ")
    (silence,) = live_twin.alert_actions.mutes()
    assert silence["created_by"] == "otto" and silence["scope"] == "H1"
    assert viewer.callback(mute_body(silence["id"])).status_code == 403
    assert live_twin.alert_actions.mutes() != []
    ended = operator.callback(mute_body(silence["id"]))
    assert ended.status_code == 200 and _message(ended) == "silence of H1 expired"
    assert live_twin.alert_actions.mutes() == []
    entries = [e for e in list_entries(live_twin.db) if e["action"] in ("silence.add", "silence.expire")]
    assert [(e["action"], e["user_name"]) for e in entries] == [("silence.expire", "otto"), ("silence.add", "otto")]
    bad = operator.callback(mute_body(scope_value="H1 R01"))
    assert _message(bad) == "not done: hall 'H1 R01': only printable characters without spaces are allowed"
