"""Shell components: data-age badges, navigation, KPI cards and the header status."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from dashboard import ids
from dashboard.components.data_age import age_badges, age_class, format_age
from dashboard.components.kpi import kpi_card
from dashboard.components.nav import PAGES, active_link_classes, nav_bar
from dashboard.shell.frame import status_view


def test_age_classes_turn_stale_then_dead():
    assert [age_class(a) for a in (0.5, 9.9, 10.0, 59.0, 60.0, math.inf, None, math.nan)] == [
        "fresh",
        "fresh",
        "stale",
        "stale",
        "dead",
        "dead",
        "dead",
        "dead",
    ]


def test_format_age_units():
    assert [format_age(a) for a in (0.84, 42, 420, 3 * 3600 + 360, math.inf)] == [
        "0.8 s",
        "42 s",
        "7 min",
        "3.1 h",
        "never",
    ]


def test_badges_sorted_with_class_and_title():
    badges = age_badges({"redfish": 30.0, "dcgm": 1.0})
    assert [b.to_plotly_json()["props"]["data-source"] for b in badges] == ["dcgm", "redfish"]
    assert badges[1].className == "age-badge stale"
    assert "redfish" in badges[1].title
    assert age_badges({})[0].className == "age-badge dead"


def test_nav_lists_every_page_and_marks_the_active_one():
    links = nav_bar().children
    assert [link.href for link in links] == [path for path, _ in PAGES]
    assert {"/cooling", "/power", "/fabric", "/jobs"} <= {link.href for link in links}
    assert active_link_classes("/floor/", ["/", "/floor"]) == ["nav-link", "nav-link active"]
    assert active_link_classes(None, ["/", "/floor"]) == ["nav-link active", "nav-link"]


def test_kpi_card_value_id_and_status():
    card = kpi_card("overview", "pue", "PUE", "", "1.18", "note", "warning")
    value = card.children[1].children[0]
    assert value.id == ids.kpi_value("overview", "pue")
    assert value.className == "kpi-value warning"


def test_status_view_marks_old_snapshots_stale_and_dead():
    now = datetime(2026, 7, 15, 12, 0, 30, tzinfo=UTC)
    clock, badges, main = status_view(now - timedelta(seconds=2), {"twin": 1.0}, now)
    assert main == "main" and clock.startswith("2026-07-15 12:00:28 UTC")
    assert status_view(now - timedelta(seconds=20), {}, now)[2] == "main is-stale"
    assert status_view(now - timedelta(seconds=90), {}, now)[2] == "main is-dead"
    assert status_view(None, {}, now)[0] == "no data yet"
