"""Entity links point at the page and query parameter that restores the entity's view."""

from __future__ import annotations

from urllib.parse import urlencode

from dashboard.shell.entity_links import entity_href


def test_links_per_entity_kind(demo_state):
    s = demo_state
    assert entity_href(s, "rack", 2) == f"/floor?rack={s.rack_name[2]}"
    assert entity_href(s, "gpu", 70) == f"/floor?rack={s.rack_name[s.gpu_rack[70]]}&metric=max_gpu_temp_c"
    assert entity_href(s, "node", 9) == f"/floor?rack={s.rack_name[s.node_rack[9]]}"
    assert entity_href(s, "cdu", 0) == "/cdu?" + urlencode({"cdu": s.cdu_name[0]})
    assert entity_href(s, "busway", None, s.power_name[5]) == f"/power?element={s.power_name[5]}"
    assert entity_href(s, "link", 0) == f"/fabric?switch={s.switch_name[s.link_a[0]]}"
    assert entity_href(s, "job", None, "pretrain 70b") == "/jobs?job=pretrain+70b"
    assert entity_href(s, "weather-station", 1) is None


def test_bad_ids_fall_back_to_names_or_page(demo_state):
    assert entity_href(demo_state, "rack", "not-a-number", "H1-R01-K01") == "/floor?rack=H1-R01-K01"
    assert entity_href(demo_state, "cdu", 10_000) == "/cooling"


def test_an_xid_alerts_gpu_name_links_to_its_rack(demo_state):
    """The banner knows an alert's GPU by name only ("<node>/gpu<index>"): it still links to the rack."""
    node = demo_state.node_name[9]  # rack 1 (8 nodes per rack)
    assert entity_href(demo_state, "gpu", None, f"{node}/gpu3") == (
        f"/floor?rack={demo_state.rack_name[1]}&metric=max_gpu_temp_c"
    )
    assert entity_href(demo_state, "gpu", None, "no-such-node/gpu0") is None
