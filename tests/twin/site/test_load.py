"""Site loading: reference sites, index maps, and validation errors that name file, entity and field."""

import re

import numpy as np
import pytest

from twin.site.catalogue import load_catalogue
from twin.site.errors import SiteError
from twin.site.load import SITES_DIR, build_site, load_site
from twin.site.summary import site_summary
from twin.site.tables import TIER_CORE, TIER_LEAF, TIER_SPINE


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


@pytest.fixture(scope="module")
def colossus():
    return load_site("colossus")


@pytest.fixture(scope="module")
def demo_text():
    return (SITES_DIR / "demo.toml").read_text()


def build(text):
    return build_site(text, "edited.toml", load_catalogue())


def test_colossus_matches_the_published_build(colossus):
    s = site_summary(colossus)
    assert s["n_gpus"] >= 100_000 and s["n_gpus"] == s["n_racks"] * 64 == s["n_nodes"] * 8
    assert s["n_halls"] == 4 and 1_500 <= s["n_racks"] <= 1_600
    assert s["n_cdus"] == s["n_racks"]  # one in-rack CDU per rack
    assert s["generation_capacity_by_kind_mw"] == {"grid_mw": 8.0, "generator_mw": 35.0, "battery_mw": 0.0}
    assert s["n_power_sources_by_kind"]["generator"] == 14
    # [Est-Clos-Sizing]: a 1:1 three-tier Clos of 128-port switches for 100k endpoints ≈ 3,900 switches
    assert 3_800 <= s["n_switches"] <= 4_100
    assert colossus.fabric_pod_gpus == 4096


def test_index_maps_are_consistent(demo):
    assert demo.n_gpus == 1024 and demo.n_racks == 16
    np.testing.assert_array_equal(demo.gpu_rack, demo.node_rack[demo.gpu_node])
    assert np.bincount(demo.gpu_rack).tolist() == [64] * 16
    assert np.bincount(demo.gpu_node).tolist() == [8] * 128
    np.testing.assert_array_equal(demo.gpu_index, np.tile(np.arange(8), 128))
    assert (demo.power_kind[demo.rack_feed_a] == 3).all() and (demo.power_side[demo.rack_feed_a] == 0).all()
    assert (demo.power_side[demo.rack_feed_b] == 1).all()
    # parents come before children in the power tree
    has_parent = demo.power_parent >= 0
    assert (demo.power_parent[has_parent] < np.flatnonzero(has_parent)).all()
    assert (demo.power_depth[has_parent] == demo.power_depth[demo.power_parent[has_parent]] + 1).all()
    assert (demo.power_kind[demo.source_bus] == 0).all()
    assert demo.node_name[9] == "h1-r01-k02-n1" and demo.rack_name[9] == "H1-R02-K02"


def test_fabric_is_rail_optimised_and_every_port_budget_holds(colossus):
    s = colossus
    leaf = s.gpu_leaf
    # GPUs of one leaf share their rail and their array
    assert (
        np.bincount(leaf, weights=s.gpu_index) / np.bincount(leaf) == s.gpu_index[np.unique(leaf, return_index=True)[1]]
    ).all()
    assert np.bincount(leaf).max() == 64
    up = np.bincount(s.link_a, minlength=s.n_switches)
    down = np.bincount(s.link_b, minlength=s.n_switches) + np.bincount(leaf, minlength=s.n_switches)
    assert (up + down <= s.switch_ports).all()
    assert (s.switch_tier[s.link_a] < s.switch_tier[s.link_b]).all()
    leaf_up = up[s.switch_tier == TIER_LEAF]
    assert (leaf_up == 64).all()
    # each leaf reaches every spine of its own pod, never another pod's
    ls = s.switch_tier[s.link_a] == TIER_LEAF
    assert (s.switch_pod[s.link_a[ls]] == s.switch_pod[s.link_b[ls]]).all()
    assert (s.switch_tier[s.link_b[~ls]] == TIER_CORE).all()
    assert int((s.switch_tier == TIER_SPINE).sum()) == 25 * 64


def test_demo_file_round_trips_through_the_builder(demo_text, demo):
    again = build(demo_text)
    assert again.n_gpus == demo.n_gpus and again.power_name == demo.power_name


@pytest.mark.parametrize(
    "edit, entity, field, message",
    [
        (
            ('feed_a = "H1-BW-R01-A"', 'feed_a = "H1-BW-R09-A"', 1),
            "row H1/R01",
            "feed_a",
            "'H1-BW-R09-A' is not a busway",
        ),
        (
            ('parent = "H1-UPS1-A"', 'parent = "H1-UPS7-A"', 1),
            "busway 'H1-BW-R01-A'",
            "parent",
            "'H1-UPS7-A' does not exist",
        ),
        (("y_m = 4.2", "y_m = 1.0", 1), "rack 'H1-R01-K01'", "position", "taken by another rack"),
        (
            ('switch = "core-g00-c00"', 'switch = "core-g99-c00"', 1),
            "fabric endpoint 'STORAGE'",
            "switch",
            "unknown switch",
        ),
        (('rack_type = "demo-dlc-h100"', 'rack_type = "dgx-b300"', 1), "row H1/R01", "rack_type", "unknown rack type"),
        (
            ("supply_setpoint_c = 25.0", "supply_setpoint_c = 38.0", 1),
            "cdu 'H1-R01-K01-CDU'",
            "capacity",
            "overloaded by design",
        ),
        (("amps = 2000.0", "amps = 100.0", 1), "busway 'H1-BW-R01-A'", "rating_kw", "overloaded by design"),
        (("unit_mw = 0.6", "unit_mw = -1", 1), "power.sources 'GRID'", "unit_mw", "greater than 0"),
        (("racks = 8", "rack = 8", 1), "halls.rows 'R01'", "racks", "Field required"),
        (('bus = "MV-A"', 'bus = "H1-TX1-A"', 1), "source 'GRID'", "bus", "not a switchgear"),
        (("pod_arrays = 2", "pod_arrays = 4", 1), "fabric", "pod_arrays", "a spine needs 128 downlinks"),
    ],
)
def test_a_broken_file_names_file_entity_and_field(demo_text, edit, entity, field, message):
    old, new, count = edit
    assert old in demo_text, old
    with pytest.raises(SiteError) as info:
        build(demo_text.replace(old, new, count))
    err = info.value
    assert err.file == "edited.toml"
    assert (err.entity, err.field) == (entity, field), str(err)
    assert re.search(re.escape(message), err.problem), str(err)


def test_invalid_toml_and_unknown_site_are_clear_errors(demo_text):
    with pytest.raises(SiteError, match="edited.toml: site file: -: not valid TOML"):
        build(demo_text + "\n[[[")
    with pytest.raises(SiteError, match="no such site file .*reference sites: colossus, colossus-2025, demo"):
        load_site("atlantis")
