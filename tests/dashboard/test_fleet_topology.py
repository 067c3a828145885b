"""Occupancy of the fabric's domains (leaf groups, NVLink blocks) from the fleet's per-GPU job map, by hand."""

from __future__ import annotations

import numpy as np

from dashboard.analysis.fleet_topology import domain_occupancy, nodes_out_ids
from dashboard.figures.fleet import topology_figure
from tests.twin.fleet.tiny_fleet import tiny_fleet_site
from twin.fleet.topology import fleet_topology


def test_leaf_groups_count_allocated_out_and_distinct_jobs():
    # tiny fleet site: 4 racks of 2 nodes of 8 GPUs, one leaf group per rack, racks 0–1 in pod 0, 2–3 in pod 1
    topo = fleet_topology(tiny_fleet_site())
    gpu_job = np.full(64, -1)
    gpu_job[0:8] = 0  # node 0: job 0
    gpu_job[8:12] = 1  # half of node 1: job 1
    gpu_job[32:48] = 2  # nodes 4 and 5 (rack 2): job 2
    occ = domain_occupancy(topo, gpu_job, np.array([3]), "leaf")  # node 3 (rack 1) out of service
    assert occ.pod.tolist() == [0, 0, 1, 1]
    assert occ.gpus_count.tolist() == [16, 16, 16, 16]
    assert occ.allocated_gpus_count.tolist() == [12, 0, 16, 0]
    assert occ.out_gpus_count.tolist() == [0, 8, 0, 0]
    assert occ.free_gpus_count.tolist() == [4, 8, 0, 16]
    assert occ.jobs_count.tolist() == [2, 0, 1, 0]
    assert occ.allocated_frac.tolist() == [0.75, 0.0, 1.0, 0.0]
    assert occ.name == ["R1-0", "R1-1", "R1-2", "R1-3"]  # one rack per leaf group here
    # no NVLink racks on this site: no blocks
    assert domain_occupancy(topo, gpu_job, np.array([], np.int64), "block").name == []


def test_the_figure_is_a_row_per_pod_with_the_free_gpus_written():
    topo = fleet_topology(tiny_fleet_site())
    gpu_job = np.full(64, -1)
    gpu_job[0:8] = 0
    occ = domain_occupancy(topo, gpu_job, np.array([], np.int64), "leaf")
    trace = topology_figure(occ, "t").data[0]
    assert list(trace.y) == ["pod 0", "pod 1"]
    assert np.asarray(trace.z).tolist() == [[0.5, 0.0], [0.0, 0.0]]
    assert np.asarray(trace.text).tolist() == [["8", "16"], ["16", "16"]]
    assert "8 of 16 GPUs allocated to 1 job" in trace.customdata[0][0]


def test_the_nodes_out_are_named_in_the_frame():
    state = tiny_fleet_site()
    nodes = [{"node": state.node_name[3]}, {"node": "not-a-node-here"}, {"node": state.node_name[0]}]
    assert nodes_out_ids(state, nodes).tolist() == [3, 0]
