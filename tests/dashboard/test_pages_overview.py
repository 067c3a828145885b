"""Overview page functions, called directly."""

from __future__ import annotations

from dashboard import ids


def test_kpis_from_the_snapshot(page_module, demo_hub):
    overview = page_module("overview")
    snap = demo_hub.latest()
    kpis = overview.kpi_view(demo_hub.state, snap, demo_hub.alerts())
    assert kpis["it_power"][0] == f"{snap.it_power_mw:,.1f}"
    assert kpis["pue"][0] == f"{snap.pue_ratio:.2f}"
    assert kpis["alerts"][0] == "3" and kpis["alerts"][2] == "critical"
    assert kpis["gpus_ok"][1] == f"of {demo_hub.state.n_gpus:,}"
    assert set(kpis) == {name for name, _, _ in overview.KPIS}


def test_kpis_without_data_show_dashes(page_module, demo_state):
    overview = page_module("overview")
    assert all(v[0] == "–" for v in overview.kpi_view(demo_state, None, []).values())


def test_window_from_url(page_module):
    overview = page_module("overview")
    assert [overview.parse_window(v) for v in ("3600", None, "abc", "5", "21600")] == [3600, 900, 900, 900, 21600]


def test_layout_restores_window_and_has_every_card(page_module, demo_hub, hub_request, find):
    overview = page_module("overview")
    with hub_request(demo_hub):
        page = overview.layout(window="3600")
    assert find(page, ids.Overview.WINDOW).value == 3600
    assert len(find(page, ids.Overview.KPIS).children) == len(overview.KPIS)
    assert find(page, ids.Overview.POWER_TREND).figure.layout.uirevision.endswith("3600")


def test_live_update_sends_texts_and_patches(page_module, demo_hub):
    overview = page_module("overview")
    names = [n for n, _, _ in overview.KPIS]
    values, classes, hot, alerts, jobs, *patches = overview.overview_update(demo_hub, 900, names)
    assert len(values) == len(classes) == len(names)
    assert len(patches) == len(overview.TRENDS)
    ops = patches[0].to_plotly_json()["operations"]
    assert {op["location"][-1] for op in ops} == {"x", "y"}
    assert len(hot.children[1].children) == 10
