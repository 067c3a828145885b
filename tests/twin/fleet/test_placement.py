"""Tree and block placement on the tiny fleet (leaf group = rack of 2 nodes, pods of 2 racks)."""

from __future__ import annotations

import numpy as np

from tests.twin.fleet.tiny_fleet import tiny_fleet_site
from twin.fleet.cluster import new_cluster
from twin.fleet.placement import Request, domains_spanned, place
from twin.fleet.topology import fleet_topology


def _cluster(busy_nodes):
    """Free nodes per rack [1, 2, 1, 2] when nodes 0 and 4 are busy."""
    topo = fleet_topology(tiny_fleet_site())
    cl = new_cluster(topo)
    for n in busy_nodes:
        cl.allocate(99, topo.node_gpu_ids(np.array([n])))
    return cl


def _nodes(cl, gpus):
    return sorted(set(cl.topo.site.gpu_node[gpus].tolist()))


def test_tree_takes_the_best_fitting_leaf_flat_the_first_free_nodes():
    cl = _cluster([0, 4])
    assert _nodes(cl, place(cl, Request(16), "tree")) == [2, 3]  # rack 1: one leaf
    assert _nodes(cl, place(cl, Request(16), "flat")) == [1, 2]  # spans racks 0 and 1


def test_tree_climbs_to_a_pod_and_fills_the_fullest_leaf_first():
    cl = _cluster([0, 4])
    gpus = place(cl, Request(24), "tree")  # 3 nodes: no leaf holds them, pod 0 does (racks 0, 1)
    assert _nodes(cl, gpus) == [1, 2, 3]
    assert domains_spanned(cl, gpus, "pod") == 1


def test_a_pod_requirement_refuses_what_only_spans_pods():
    cl = _cluster([0, 4])
    assert place(cl, Request(32, topology="pod"), "tree") is None  # 4 nodes, each pod has 3 free
    assert place(cl, Request(32), "tree") is not None


def test_block_segments_stay_inside_blocks():
    cl = _cluster([0, 4])
    gpus = place(cl, Request(32, topology="segment", segment_nodes=2), "block")
    assert _nodes(cl, gpus) == [2, 3, 6, 7]  # two blocks with 2 free nodes each
    assert place(cl, Request(24, topology="segment", segment_nodes=2), "block") is None  # 3 nodes: not whole segments
    assert _nodes(cl, place(cl, Request(16), "block")) == [2, 3]


def test_a_small_job_shares_the_fullest_node_that_holds_it():
    topo = fleet_topology(tiny_fleet_site())
    cl = new_cluster(topo)
    cl.allocate(1, np.arange(8, 14))  # node 1: 2 GPUs free
    gpus = place(cl, Request(2), "tree")
    assert gpus.tolist() == [14, 15]
    assert place(cl, Request(2), "flat").tolist() == [0, 1]  # first fit: node 0


def test_gpu_ids_of_nodes_and_free_nodes_per_domain_read_off_runs_of_nodes():
    import dataclasses

    from twin.fleet.placement import _best_domain

    topo = fleet_topology(tiny_fleet_site())
    assert topo.node_gpu_ids(np.array([5, 2])).tolist() == list(range(40, 48)) + list(range(16, 24))
    assert topo.node_gpu_ids(np.array([], np.int64)).size == 0
    # nodes of two sizes: the GPU ids node by node, whichever way they are read
    mixed = dataclasses.replace(topo, node_gpus=np.array([8, 4, 8, 8, 4, 8, 8, 8], np.int16))
    mixed = dataclasses.replace(mixed, node_first_gpu=np.concatenate(([0], np.cumsum(mixed.node_gpus[:-1]))))
    assert not mixed.uniform_nodes
    assert mixed.node_gpu_ids(np.array([1, 4])).tolist() == [8, 9, 10, 11, 28, 29, 30, 31]
    assert mixed.node_gpu_ids(np.array([4, 0])).tolist() == [28, 29, 30, 31, 0, 1, 2, 3, 4, 5, 6, 7]
    # leaves are runs of two nodes, pods of four: counted per run, the same best domain as counted node by node
    assert topo.domain_starts("leaf").tolist() == [0, 2, 4, 6] and topo.domain_starts("pod").tolist() == [0, 4]
    rng = np.random.default_rng(3)
    for _ in range(50):
        free = rng.random(8) < 0.5
        for level in ("leaf", "pod", "site"):
            for k in (1, 2, 3):
                dom = topo.domain(level)
                assert _best_domain(dom, free, k, topo.domain_starts(level)) == _best_domain(dom, free, k)
    scattered = np.array([0, 1, 0, 1, 2, 2, 3, 3], np.int32)  # not runs: no starts, counted node by node
    assert dataclasses.replace(topo, node_leaf=scattered).domain_starts("leaf") is None
