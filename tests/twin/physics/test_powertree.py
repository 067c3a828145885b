"""Tests of twin/physics/powertree.py: roll-up conservation, liveness, blast radius and vectorised N-1."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tests.twin.tiny_site import A1, A2, B1, B2, tiny_site
from twin.physics import powertree as pt
from twin.site.load import load_site

P = np.array([10.0, 10.0, 10.0, 10.0])  # kW per rack


@pytest.fixture(scope="module")
def topo():
    return pt.build_topology(tiny_site())


def _failure_outcome(topo, rack_power_kw, failed=(), source_live=None):
    """Full roll-up with ``failed`` elements lost: dark racks, overloaded elements, loads (the brute force)."""
    if source_live is None:
        source_live = np.ones(topo.source_bus.size, dtype=bool)
    live = pt.element_live(topo, np.asarray(failed, dtype=np.int64), source_live)
    share_a, share_b, dark = pt.rack_feed_shares(topo, live)
    load, _ = pt.rollup(topo, rack_power_kw, share_a, share_b)
    frac = pt.load_frac(load, topo.usable_kw)
    return SimpleNamespace(dark_racks=np.flatnonzero(dark), overloaded=np.flatnonzero(frac > 1.0), load_kw=load)


def _healthy(topo):
    live = pt.element_live(topo, [], np.ones(2, bool))
    return live, *pt.rack_feed_shares(topo, live)


def test_rollup_conserves_power_plus_losses(topo):
    live, sa, sb, dark = _healthy(topo)
    load, inp = pt.rollup(topo, P, sa, sb)
    assert not dark.any()
    # busways: A1 = racks 0,1 halves; A2 = rack 2 half + single-fed rack 3; B1 = 10; B2 = 5
    assert load[[A1, A2, B1, B2]] == pytest.approx([10.0, 15.0, 10.0, 5.0])
    # every parent carries the input (load / efficiency) of its children
    for e in range(topo.n_power):
        children = np.flatnonzero(topo.parent == e)
        if children.size:
            assert load[e] == pytest.approx(inp[children].sum())
    # what enters at the roots is the rack power divided by UPS and transformer efficiency
    roots = topo.top_down[0]
    assert inp[roots].sum() == pytest.approx(P.sum() / (0.97 * 0.99))
    assert load[4] == pytest.approx(25.0) and load[5] == pytest.approx(15.0)


def test_n1_on_the_2n_tree_matches_hand_values(topo):
    live, sa, sb, _ = _healthy(topo)
    load, _ = pt.rollup(topo, P, sa, sb)
    worst, by = pt.n1_worst_load_kw(topo, load, P, sa, sb, live)
    # losing the B side (any of SG-B, TX-B, UPS-B) moves racks 0–2's B halves to A
    assert worst[A1] == pytest.approx(20.0) and worst[A2] == pytest.approx(20.0)
    assert worst[4] == pytest.approx(40.0)  # UPS-A carries all four racks
    assert worst[2] == pytest.approx(40.0 / 0.97)  # TX-A
    assert worst[B1] == pytest.approx(20.0)
    assert worst[B2] == pytest.approx(10.0)  # rack 3 is single-fed: nothing moves to B for it
    assert by[A1] in (B1, 5, 3, 1) and by[B2] in (A2, 4, 2, 0)


def test_vectorised_n1_equals_brute_force(topo):
    rng = np.random.default_rng(1)
    power_kw = rng.uniform(5.0, 15.0, topo.n_racks)
    _check_against_brute_force(topo, power_kw, failed=[])
    _check_against_brute_force(topo, power_kw, failed=[B1])  # N-1 on top of an existing failure


@pytest.mark.parametrize("site", ["demo", "colossus"])
def test_vectorised_n1_equals_brute_force_on_reference_sites(site):
    topo = pt.build_topology(load_site(site))
    power_kw = np.random.default_rng(2).uniform(40.0, 60.0, topo.n_racks)
    _check_against_brute_force(topo, power_kw, failed=[])


def _check_against_brute_force(topo, power_kw, failed):
    sources = np.ones(topo.source_bus.size, bool)
    live = pt.element_live(topo, failed, sources)
    sa, sb, _ = pt.rack_feed_shares(topo, live)
    load, _ = pt.rollup(topo, power_kw, sa, sb)
    worst, _ = pt.n1_worst_load_kw(topo, load, power_kw, sa, sb, live)
    brute = load.copy()
    for e in range(topo.n_power):
        outcome = _failure_outcome(topo, power_kw, list(failed) + [e], sources)
        brute = np.maximum(brute, outcome.load_kw)
    assert worst == pytest.approx(brute, rel=1e-9, abs=1e-9)


def test_blast_radius_dark_racks_and_overloads():
    topo = pt.build_topology(tiny_site(busway_kw=18.0))
    out = _failure_outcome(topo, P, [A2])
    assert list(out.dark_racks) == [3]
    out = _failure_outcome(topo, P, [4])  # UPS-A
    assert list(out.dark_racks) == [3]
    out = _failure_outcome(topo, P, [B1])
    assert out.dark_racks.size == 0 and list(out.overloaded) == [A1]  # 20 kW on an 18 kW busway
    assert list(np.flatnonzero(topo.dark_racks_if_lost)) == [0, 2, 4, A2]
    assert topo.dark_racks_if_lost[A2] == 1


def test_source_loss_deenergises_its_switchgear():
    topo = pt.build_topology(tiny_site())
    live = pt.element_live(topo, [], np.array([False, True]))  # grid lost
    assert not live[[0, 2, 4, A1, A2]].any() and live[[1, 3, 5, B1, B2]].all()
    out = _failure_outcome(topo, P, [], np.array([False, True]))
    assert list(out.dark_racks) == [3]
    assert out.load_kw[B1] == pytest.approx(20.0)
