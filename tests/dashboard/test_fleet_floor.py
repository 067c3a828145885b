"""The fleet's layer of the floor plan on demo (16 racks of 64 GPUs, 8 nodes each), from a hand-built frame."""

from __future__ import annotations

import numpy as np

from dashboard.analysis.fleet_floor import FREE_LABEL, JOBS_COLOURED, OTHER_JOBS_LABEL, fleet_floor
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
    assert layer.rack_note(0) == "team beta · 64 GPUs allocated, most to job b-1" and layer.rack_note(2) == "free"
    assert layer.job is None and layer.job_racks is None


def test_nodes_out_of_service_and_a_jobs_racks(demo_state):
    nodes = [
        {"node": demo_state.node_name[9], "state": "drained", "reason": "Xid 79 <GPU off the bus>", "since_s": -600.0},
        {"node": demo_state.node_name[10], "node_id": 10, "state": "down", "since_s": -7200.0},  # rack 1 as well
        {"node": demo_state.node_name[12], "state": "drained"},  # no reason, no time: listed last
        {"node": "not-a-node", "state": "down"},  # a Slurm node the site does not have: left out
    ]
    frame = _frame(demo_state, [("a-1", "alpha", list(range(60, 200)))], nodes)
    layer = fleet_floor(demo_state, frame, job="a-1")
    assert layer.nodes_out.tolist()[:3] == [0, 3, 0] and layer.nodes_out.sum() == 3
    assert layer.nodes_out_states[1] == "2 nodes drained, 1 node down"
    assert layer.nodes_out_details[1] == [
        f"{demo_state.node_name[10]} down for 2.0 h",
        f"{demo_state.node_name[9]} drained for 10 min: Xid 79 &lt;GPU off the bus&gt;",
        f"{demo_state.node_name[12]} drained for –",
    ]
    assert layer.rack_note(1).split("<br>") == [
        "team alpha · 64 GPUs allocated, most to job a-1 · 2 nodes drained, 1 node down",
        *layer.nodes_out_details[1],
    ]
    assert np.flatnonzero(layer.job_racks).tolist() == [0, 1, 2, 3] and layer.job_gpus_count == 140
    assert fleet_floor(demo_state, frame, job="nope").job_gpus_count == 0


def test_an_empty_fleet_leaves_every_rack_free(demo_state):
    layer = fleet_floor(demo_state, _frame(demo_state, [], []))
    assert (layer.team == len(layer.teams) - 1).all() and layer.nodes_out.sum() == 0


def test_each_rack_takes_the_job_holding_most_of_its_gpus(demo_state):
    # rack 0: b-1 40, a-1 24 → b-1; rack 1: a-1 8 → a-1; rack 2: a-1 32, c-1 32 → a-1 (the lower row);
    # rack 3: c-1 1 → c-1.  Racks held: a-1 2, b-1 1, c-1 1 → a-1 first, then b-1 (lower row), c-1.
    frame = _frame(
        demo_state,
        [
            ("a-1", "alpha", list(range(40, 72)) + list(range(128, 160))),
            ("b-1", "beta", list(range(0, 40))),
            ("c-1", "alpha", list(range(160, 192)) + [192]),
        ],
        [],
    )
    layer = fleet_floor(demo_state, frame)
    assert layer.jobs == ["a-1", "b-1", "c-1", OTHER_JOBS_LABEL, FREE_LABEL]
    assert layer.job_category[:4].tolist() == [1, 0, 0, 2] and (layer.job_category[4:] == 4).all()
    assert layer.rack_job[:5] == ["b-1", "a-1", "a-1", "c-1", ""]
    assert layer.rack_note(3) == "team alpha · 1 GPU allocated, most to job c-1"


def test_jobs_beyond_the_coloured_ones_share_one_category(demo_state):
    # j-0 holds racks 0-3, j-1 … j-12 one rack each (4 … 15): j-0 first, then the lower rows up to
    # JOBS_COLOURED; j-10 … j-12 are "other jobs"
    assert JOBS_COLOURED == 10 and demo_state.n_racks == 16
    jobs = [("j-0", "alpha", list(range(0, 4 * 64)))]
    jobs += [(f"j-{k}", "beta", list(range((k + 3) * 64, (k + 4) * 64))) for k in range(1, 13)]
    layer = fleet_floor(demo_state, _frame(demo_state, jobs, []))
    assert layer.jobs == [f"j-{k}" for k in range(10)] + [OTHER_JOBS_LABEL, FREE_LABEL]
    assert layer.job_category.tolist() == [0] * 4 + list(range(1, 10)) + [10] * 3
    assert layer.rack_job[13:] == ["j-10", "j-11", "j-12"]


def test_a_rack_names_a_few_of_its_nodes_out_and_counts_the_rest(demo_state):
    nodes = [{"node": demo_state.node_name[k], "state": "down", "since_s": -60.0 * (k + 1)} for k in range(5)]
    layer = fleet_floor(demo_state, _frame(demo_state, [], nodes))
    assert layer.nodes_out_details[0] == [
        f"{demo_state.node_name[4]} down for 5 min",
        f"{demo_state.node_name[3]} down for 4 min",
        f"{demo_state.node_name[2]} down for 3 min",
        "and 2 more",
    ]
    assert layer.rack_note(0).startswith("free · 5 nodes down<br>")


def test_a_racks_hover_escapes_what_the_scheduler_names(demo_state):
    # Slurm's accounts, job ids and node reasons are text from outside: the hover renders markup
    frame = _frame(demo_state, [("<b>1</b>", "alpha", list(range(0, 64)))], [])
    frame.teams[0]["team"] = "alpha"
    frame.jobs["team"][0] = "al<i>pha"
    layer = fleet_floor(demo_state, frame)
    assert layer.rack_note(0) == "team al&lt;i&gt;pha · 64 GPUs allocated, most to job &lt;b&gt;1&lt;/b&gt;"
