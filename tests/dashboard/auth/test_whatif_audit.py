"""The what-if page's scenario management writes audit entries with the state before and after."""

from __future__ import annotations

import inspect

import pytest

from dashboard import ids
from ingest.store.audit import AuditFilter, list_entries

W = ids.WhatIf
ORDER = (W.NEW, W.RENAME, W.DUPLICATE, W.DELETE, W.UNDO, W.REDO, W.IMPORT, W.SCENARIO)


def _manage_key(app) -> str:
    def is_manage(func) -> bool:
        func = inspect.unwrap(func)
        return func.__module__ == "dashboard.pages.whatif" and func.__name__ == "manage"

    return next(key for key, entry in app.callback_map.items() if "callback" in entry and is_manage(entry["callback"]))


def _body(app, trigger: str, current, name) -> dict:
    key = _manage_key(app)
    entry = app.callback_map[key]
    values = {W.SCENARIO: current, W.IMPORT: None}
    inputs = [
        {
            "id": spec["id"],
            "property": spec["property"],
            "value": 1 if spec["id"] == trigger else values.get(spec["id"]),
        }
        for spec in entry["inputs"]
    ]
    state = [{"id": W.NAME, "property": "value", "value": name}, {"id": W.REVISION, "property": "data", "value": None}]
    outputs = entry["output"] if isinstance(entry["output"], list) else [entry["output"]]
    return {
        "output": key,
        "outputs": [{"id": o.component_id, "property": o.component_property} for o in outputs],
        "inputs": inputs,
        "state": state,
        "changedPropIds": [f"{trigger}.n_clicks"],
    }


@pytest.mark.slow
def test_rename_and_delete_record_the_scenario_before_and_after(auth_app, client, live_twin):
    assert [spec["id"] for spec in auth_app.callback_map[_manage_key(auth_app)]["inputs"]] == list(ORDER)
    operator = client()
    operator.login("otto")
    assert operator.callback(_body(auth_app, W.NEW, None, "audit-draft")).status_code == 200
    assert operator.callback(_body(auth_app, W.RENAME, "audit-draft", "audit-final")).status_code == 200
    assert operator.callback(_body(auth_app, W.DELETE, "audit-final", "")).status_code == 200
    entries = {e["action"]: e for e in list_entries(live_twin.db, AuditFilter(user_name="otto", action="scenario."))}
    new, rename, delete = entries["scenario.new"], entries["scenario.rename"], entries["scenario.delete"]
    assert new["before"] is None and new["after"]["scenario"] == "audit-draft"
    assert rename["before"] == {"scenario": "audit-draft", "edits": 0, "edit_list": []}
    assert rename["after"]["scenario"] == "audit-final" and rename["target"] == "scenario audit-final"
    assert delete["before"]["scenario"] == "audit-final" and delete["target"] == "scenario audit-final"
    assert delete["after"] == {"message": "deleted audit-final", "edits": 0}
