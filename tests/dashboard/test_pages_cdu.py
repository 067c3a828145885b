"""The CDU detail page: its state line, KPIs, trends, its racks and the alerts under it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dashboard import ids


@pytest.fixture()
def in_app(dash_app):
    with dash_app.server.app_context():
        yield dash_app.server.config


def test_state_line_says_lost_no_redundancy_or_over_capacity(page_module, demo_state, demo_snapshot):
    cdu = page_module("cdu")
    pumps = demo_snapshot.pumps_running_count.copy()
    pumps[0], pumps[1] = 0, 1
    pumps[3] = int(demo_state.cdu_spec_array("pumps")[3])
    heat = demo_snapshot.cdu_heat_kw.copy()
    heat[2] = demo_snapshot.cdu_capacity_kw[2] * 1.2
    heat[3] = demo_snapshot.cdu_capacity_kw[3] * 0.5
    pumps[2] = pumps[3]
    snap = replace(demo_snapshot, pumps_running_count=pumps, cdu_heat_kw=heat)
    assert cdu.cdu_state(demo_state, snap, 0)[0] == "critical" and "LOST" in cdu.cdu_state(demo_state, snap, 0)[1]
    assert cdu.cdu_state(demo_state, snap, 1) == ("warning", "NO REDUNDANCY — 1 of 2 pumps running")
    assert "OVER CAPACITY" in cdu.cdu_state(demo_state, snap, 2)[1]
    assert cdu.cdu_state(demo_state, snap, 3)[0] == "ok"


def test_alerts_of_the_cdu_its_racks_and_its_group(page_module, demo_state):
    cdu = page_module("cdu")
    rack = int(np.flatnonzero(demo_state.rack_cdu == 0)[0])
    key = "pump:cdu:0"
    alerts = [
        {
            "key": key,
            "group": key,
            "severity": "critical",
            "entity_kind": "cdu",
            "entity_name": demo_state.cdu_name[0],
            "message": "lost",
            "runbook": "restart",
            "cleared_at": None,
        },
        {
            "key": "job_stalled:job:0",
            "group": key,
            "severity": "critical",
            "entity_kind": "job",
            "entity_name": "j",
            "message": "stalled",
            "runbook": "drain",
            "cleared_at": None,
        },
        {
            "key": f"gpu_hot:rack:{rack}",
            "group": "",
            "severity": "warning",
            "entity_kind": "rack",
            "entity_name": demo_state.rack_name[rack],
            "message": "hot",
            "runbook": "",
            "cleared_at": None,
        },
        {
            "key": "pump:cdu:5",
            "group": "pump:cdu:5",
            "severity": "critical",
            "entity_kind": "cdu",
            "entity_name": demo_state.cdu_name[5],
            "message": "other",
            "runbook": "",
            "cleared_at": None,
        },
    ]
    rows = cdu.alert_rows(demo_state, alerts, 0)
    assert [r["message"] for r in rows] == ["lost", "stalled", "hot"]


def test_layout_for_a_named_cdu_and_an_unknown_one(in_app, page_module, demo_state, find):
    cdu = page_module("cdu")
    page = cdu.layout(cdu=demo_state.cdu_name[3])
    assert find(page, ids.Cdu.STATUS) is not None and find(page, ids.Cdu.TEMPS) is not None
    racks = find(page, ids.Cdu.RACKS)
    assert racks is not None
    missing = cdu.layout(cdu="NOPE-CDU")
    text = str(missing.to_plotly_json())
    assert "no CDU named 'NOPE-CDU'" in text and "No CDU selected" in text
