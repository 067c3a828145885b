"""Overview page functions, called directly."""

from __future__ import annotations

from dashboard import ids


def test_tiles_from_the_view_and_the_banner_in_the_layout(page_module, demo_view, view_request, find):
    overview = page_module("overview")
    tiles = overview.tiles_of(demo_view)
    assert set(tiles) == {name for name, _, _ in overview.KPIS}
    assert tiles["alerts"].value == "3" and tiles["alerts"].status == "critical"
    with view_request(demo_view):
        page = overview.layout()
    banner = find(page, ids.Overview.STATUS)
    assert "status-banner-critical" in banner.className
    assert find(page, ids.Overview.BREAKDOWN) is not None


def test_window_from_url(page_module):
    overview = page_module("overview")
    assert [overview.parse_window(v) for v in ("3600", None, "abc", "5", "21600")] == [3600, 900, 900, 900, 21600]


def test_layout_restores_window_and_has_every_card(page_module, demo_view, view_request, find):
    overview = page_module("overview")
    with view_request(demo_view):
        page = overview.layout(window="3600")
    assert find(page, ids.Overview.WINDOW).value == 3600
    assert len(find(page, ids.Overview.KPIS).children) == len(overview.KPIS)
    assert find(page, ids.Overview.POWER_TREND).figure.layout.uirevision.endswith("3600")


def test_live_update_sends_texts_and_patches(page_module, demo_view):
    overview = page_module("overview")
    names = [n for n, _, _ in overview.KPIS]
    values, classes, notes, sparks, banner, banner_class, breakdown, hot, alerts, jobs, *patches = (
        overview.overview_update(demo_view, 900, names)
    )
    assert len(values) == len(classes) == len(notes) == len(sparks) == len(names)
    assert banner_class.startswith("status-banner")
    assert len(patches) == len(overview.TRENDS)
    ops = patches[0].to_plotly_json()["operations"]
    assert {op["location"][-1] for op in ops} == {"x", "y"}
    assert len(hot.children[1].children) == 10


def test_pinned_time_parsing_and_url(page_module):
    overview = page_module("overview")
    assert overview.parse_at("2026-07-15T14:02:10Z") == "2026-07-15 14:02:10"
    assert overview.parse_at("2026-07-15T16:02:10+02:00") == "2026-07-15 14:02:10"
    assert overview.parse_at("2026-07-15 14:02:10") == "2026-07-15 14:02:10"
    assert overview.parse_at("yesterday") is None and overview.parse_at(None) is None


def test_clicking_a_trend_pins_its_time(page_module):
    from dash import no_update

    overview = page_module("overview")
    assert overview.clicked_time({"points": [{"x": "2026-07-15 14:02:10"}]}) == "2026-07-15 14:02:10"
    assert overview.clicked_time({"points": []}) is no_update


def test_layout_draws_the_pin_on_every_trend(page_module, demo_view, view_request, find):
    overview = page_module("overview")
    with view_request(demo_view):
        page = overview.layout(at="2026-07-15T13:55:00Z")
    for tid, *_ in overview.TRENDS:
        shapes = find(page, tid).figure.layout.shapes
        assert len(shapes) == 1 and shapes[0].x0 == "2026-07-15 13:55:00"
    assert find(page, ids.Overview.PINNED).data == "2026-07-15 13:55:00"


def _text(component) -> str:
    """The text a component renders (its children's, depth first)."""
    if component is None:
        return ""
    if isinstance(component, (str, int, float)):
        return str(component)
    if isinstance(component, (list, tuple)):
        return "".join(_text(c) for c in component)
    return _text(getattr(component, "children", None))


def test_muted_causes_are_listed_last_marked_and_counted_beside_a_loud_banner(page_module, demo_state):
    from dashboard.shell.status import status_banner
    from tests.dashboard.test_status import ALERTS, BIG, NOW, _mute

    overview = page_module("overview")
    window = _mute("maintenance", "H2-BW-R01-A", "busway work", NOW, NOW.replace(hour=23))
    alerts = [dict(a, maintenance=window) if a["group"] == "n1:power:9" else a for a in ALERTS]
    listing = overview.open_alerts_list(demo_state, alerts, now=NOW)
    rows = listing.children[0].children.children
    texts = [_text(r) for r in rows]
    assert "CDU H1-R05-K03-CDU lost" in texts[0] and "· muted" not in texts[0]
    assert ["· muted" in t for t in texts] == [False, True, True]  # the busway's window, the source's own silence
    assert "N-1" in texts[1] and rows[1].className == "cause-muted" and rows[0].className is None
    banner = status_banner(alerts, [BIG], NOW, "1.2 M")
    assert banner.severity == "critical" and banner.more == 0 and len(banner.muted) == 2
    block = _text(overview.banner_block(demo_state, banner))
    assert block.endswith("0 tokens/s · 2 muted"), block
