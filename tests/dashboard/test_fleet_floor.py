"""The fleet's layer of the floor plan on demo (16 racks of 64 GPUs, 8 nodes each), from a hand-built frame."""

from __future__ import annotations

import numpy as np

from dashboard.analysis.fleet_floor import FREE_LABEL, fleet_floor
from ingest.live.fleet_frame import JOB_COLUMNS, FleetFrame


def _frame(state, jobs: list[tuple[str, str, list[int]]], nodes: list[dict]) -> FleetFrame:
    """A frame with ``jobs`` as (job id, team, GPU ids) all running, teams alpha, beta, gamma."""
    gpu_job = np.full(state.n_gpus, -1, np.int64)
    for row, (_id, _team, gpus) in enumerate(jobs):
        gpu_job[gpus] = row
    cols = {c: np.zeros(len(jobs), dtype=object) for c in JOB_COLUMNS}
    cols["job_id"] = np.array([j[0] for j in jobs], dtype=object)
    cols["team"] = np.array([j[1] for j in jobs], dtype=object)
    cols["state"] = np.array(["running"] * len(jobs), dtype=object)
    teams = [{"team": t} for t in ("alpha", "beta", "gamma")]
    return FleetFrame(0.0, "fleet model", cols, teams, nodes, {}, {}, gpu_job, state.n_gpus, state.n_nodes)


def test_each_rack_takes_the_team_holding_most_of_its_gpus(demo_state):
    # rack 0: beta 40 GPUs, alpha 24 → beta; rack 1: alpha 8 → alpha; rack 2: nothing → free
    frame = _frame(
        demo_state,
        [("a-1", "alpha", list(range(40, 64)) + list(range(64, 72))), ("b-1", "beta", list(range(0, 40)))],
        [],
    )
    layer = fleet_floor(demo_state, frame)
    assert layer.teams == ["alpha", "beta", "gamma", FREE_LABEL]  # the fleet's order, then free
    assert layer.team[:3].tolist() == [1, 0, 3] and (layer.team[3:] == 3).all()
    assert layer.gpus_allocated[:3].tolist() == [64, 8, 0]
    assert layer.rack_note(0) == "team beta · 64 GPUs allocated" and layer.rack_note(2) == "free"
    assert layer.job is None and layer.job_racks is None


def test_nodes_out_of_service_and_a_jobs_racks(demo_state):
    nodes = [
        {"node": demo_state.node_name[9], "state": "drained"},  # rack 1 (8 nodes per rack)
        {"node": demo_state.node_name[10], "node_id": 10, "state": "down"},
        {"node": demo_state.node_name[12], "state": "drained"},
        {"node": "not-a-node", "state": "down"},  # a Slurm node the site does not have: left out
    ]
    frame = _frame(demo_state, [("a-1", "alpha", list(range(60, 200)))], nodes)
    layer = fleet_floor(demo_state, frame, job="a-1")
    assert layer.nodes_out.tolist()[:3] == [0, 3, 0] and layer.nodes_out.sum() == 3
    assert layer.nodes_out_states[1] == "2 nodes drained, 1 node down"
    assert "2 nodes drained, 1 node down" in layer.rack_note(1)
    assert np.flatnonzero(layer.job_racks).tolist() == [0, 1, 2, 3] and layer.job_gpus_count == 140
    assert fleet_floor(demo_state, frame, job="nope").job_gpus_count == 0


def test_an_empty_fleet_leaves_every_rack_free(demo_state):
    layer = fleet_floor(demo_state, _frame(demo_state, [], []))
    assert (layer.team == len(layer.teams) - 1).all() and layer.nodes_out.sum() == 0
