"""Tests of twin/physics/fabric.py: nccl-tests bus bandwidth and placement/failure factors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from twin.physics import fabric
from twin.site.tables import TIER_CORE, TIER_LEAF, TIER_SPINE, SiteTables


def tiny_site() -> SiteTables:
    """2 pods × 2 leaves × 4 GPUs; 2 spines per pod; 2 cores.  All links 800G, NICs 400G (1:1).

    Switch ids: leaves 0–3 (pod 0: 0, 1; pod 1: 2, 3), spines 4–7 (pod 0: 4, 5; pod 1: 6, 7), cores 8, 9.
    """
    values = {}
    for f in dataclasses.fields(SiteTables):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        values[f.name] = [] if str(f.type).startswith("list") else np.zeros(0)
    values.update(
        name="tiny",
        description="",
        source_file="",
        nic_gbps=400.0,
        fabric_rails=1,
        fabric_pod_gpus=8,
        fabric_leaf_oversubscription=1.0,
        fabric_spine_oversubscription=1.0,
    )
    leaf_a = np.repeat([0, 1, 2, 3], 2)
    leaf_b = np.array([4, 5, 4, 5, 6, 7, 6, 7])
    spine_a = np.repeat([4, 5, 6, 7], 2)
    spine_b = np.array([8, 9, 8, 9, 8, 9, 8, 9])
    values.update(
        switch_name=[f"sw{i}" for i in range(10)],
        switch_tier=np.array([TIER_LEAF] * 4 + [TIER_SPINE] * 4 + [TIER_CORE] * 2, np.int8),
        switch_pod=np.array([0, 0, 1, 1, 0, 0, 1, 1, -1, -1], np.int32),
        switch_plane=np.array([-1] * 4 + [0, 1, 0, 1] + [0, 1], np.int32),
        switch_ports=np.full(10, 8, np.int32),
        link_a=np.concatenate([leaf_a, spine_a]).astype(np.int32),
        link_b=np.concatenate([leaf_b, spine_b]).astype(np.int32),
        link_gbps=np.full(16, 800.0),
        gpu_leaf=np.repeat(np.arange(4), 4).astype(np.int32),
        gpu_node=np.arange(16, dtype=np.int32),
    )
    return SiteTables(**values)


@pytest.mark.parametrize(
    "op, n, factor",
    [
        ("all_reduce", 8, 1.75),
        ("all_gather", 8, 0.875),
        ("reduce_scatter", 4, 0.75),
        ("broadcast", 8, 1.0),
        ("all_reduce", 1, 0.0),
    ],
)
def test_busbw_factors(op, n, factor):
    assert fabric.busbw_factor(op, n) == pytest.approx(factor)


def test_unknown_collective_and_zero_ranks_raise():
    with pytest.raises(fabric.FabricError, match="all_sum"):
        fabric.busbw_factor("all_sum", 4)
    with pytest.raises(fabric.FabricError):
        fabric.busbw_factor("all_reduce", 0)


def test_collective_time():
    # 1 GB all-reduce over 8 ranks at 40 GB/s busbw: 1e9·1.75/40e9
    assert fabric.collective_time_s("all_reduce", 1e9, 8, 40e9) == pytest.approx(0.04375)
    assert fabric.collective_time_s("all_reduce", 1e9, 1, 40e9) == 0.0
    assert fabric.collective_time_s("all_gather", 1e9, 4, 0.0) == float("inf")


def test_tier_capacity():
    cap = fabric.tier_capacity_gbps(tiny_site())
    assert cap == {"injection": 6400.0, "leaf_spine": 6400.0, "spine_core": 6400.0}


def test_spanning_groups_per_domain_hand_example():
    group = np.array([0, 0, 1, 1, 2, 2])
    domain = np.array([0, 1, 0, 0, 1, 2])  # group 1 stays in domain 0
    assert list(fabric.spanning_groups_per_domain(group, domain, 3)) == [1, 2, 1]


def test_healthy_fabric_gives_full_rate():
    s = tiny_site()
    ids = np.arange(16)
    rep = fabric.job_fabric_report(s, ids, group=ids % 4)  # 4 groups spanning all leaves and pods
    assert rep.factor_frac == 1.0 and rep.limiting_tier == "none"


def test_failed_leaf_uplink_halves_the_ring_rate():
    s = tiny_site()
    ids = np.arange(16)
    link_up_flag = np.ones(16, bool)
    link_up_flag[0] = False  # leaf 0 → spine 4
    rep = fabric.job_fabric_report(s, ids, group=ids % 4, link_up_flag=link_up_flag)
    # leaf 0: 4 spanning groups × 400G = 1600G demand on 800G surviving uplink
    assert rep.factor_frac == pytest.approx(0.5)
    assert rep.limiting_tier == "leaf" and rep.worst_leaf == 0
    assert fabric.switch_uplink_gbps(s, fabric.link_alive(s, link_up_flag))[0] == 0.5 * fabric.switch_uplink_gbps(s)[0]


def test_groups_inside_one_leaf_ignore_uplink_failures():
    s = tiny_site()
    ids = np.arange(16)
    link_up_flag = np.ones(16, bool)
    link_up_flag[0] = False
    rep = fabric.job_fabric_report(s, ids, group=ids // 4, link_up_flag=link_up_flag)  # one group per leaf
    assert rep.factor_frac == 1.0


def test_failed_spine_limits_leaves_and_pod():
    s = tiny_site()
    ids = np.arange(16)
    switch_up = np.ones(10, bool)
    switch_up[4] = False  # spine of pod 0
    rep = fabric.job_fabric_report(s, ids, group=ids % 4, switch_up=switch_up)
    assert rep.factor_frac == pytest.approx(0.5)
    pod_cap = fabric.pod_uplink_gbps(s, fabric.link_alive(s, None, switch_up))
    assert list(pod_cap) == [1600.0, 3200.0]  # one spine of pod 0 left, two uplinks each


def test_failed_leaf_disconnects_its_gpus():
    s = tiny_site()
    switch_up = np.ones(10, bool)
    switch_up[1] = False
    rep = fabric.job_fabric_report(s, np.arange(16), group=np.arange(16) % 4, switch_up=switch_up)
    assert rep.factor_frac == 0.0 and rep.limiting_tier == "disconnected"
    assert list(rep.disconnected_gpus) == [4, 5, 6, 7]


def test_mask_shapes_are_checked():
    with pytest.raises(fabric.FabricError, match="link_up_flag"):
        fabric.link_alive(tiny_site(), np.ones(3, bool))


@pytest.mark.parametrize(
    "stride, size, domain, over, expected",
    [
        (128, 128, 3072, 7.0, 1.0),
        (2048, 8, 3072, 7.0, 1 / 7),
        (512, 32, 4096, 4.0, 1.0),
        (1024, 16, 4096, 8.0, 0.5),
        (8, 16, 4096, 7.0, 1.0),
        (2048, 8, 3072, 1.0, 1.0),
    ],
)
def test_analytic_factor(stride, size, domain, over, expected):
    assert fabric.analytic_factor(stride, size, domain, over) == pytest.approx(expected)


def test_busbw():
    s = tiny_site()
    ids = np.arange(16)
    rep = fabric.job_fabric_report(s, ids, group=ids % 4)
    assert rep.busbw_gbps == pytest.approx(400.0 * 0.8)


def test_uplink_utilisation_hand_example():
    s = tiny_site()
    link_up_flag = np.ones(16, bool)
    link_up_flag[0] = False  # leaf 0 keeps one 800G uplink
    cap = fabric.switch_uplink_gbps(s, link_up_flag)
    active = np.array([4, 4, 4, 2, 0, 0, 0, 0, 0, 0], dtype=np.float64)
    util = fabric.uplink_util_frac(s, active, cap, offered_frac=0.15, cross_pod_frac=0.5)
    # each active GPU offers 400G × 0.15 = 60G; spines get their pod's leaf traffic / 2 spines × 0.5
    expected = [240 / 800, 240 / 1600, 240 / 1600, 120 / 1600, 120 / 1600, 120 / 1600, 90 / 1600, 90 / 1600, 0, 0]
    assert util == pytest.approx(expected)
    assert fabric.uplink_util_frac(s, active * 100, cap, 0.15, 0.5).max() == 1.0  # saturates at 1
