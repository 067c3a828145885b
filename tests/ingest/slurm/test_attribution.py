"""GPU-hours, energy and throttled time per job and team, from the Slurm job→GPU mapping."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ingest.slurm.attribution import GPU_DOWN, GPU_THROTTLED, Ledger, attribute, by_job, by_team, gpu_owners
from ingest.sources.slurm_records import SlurmJob, SlurmNode, SlurmSnapshot

NODES = ("n0", "n1", "n2")
NODE_GPUS = np.array([8, 8, 4])


def _job(job_id, state, nodes, account, gpus=8, idx=(), exclusive=0, user="ann"):
    return SlurmJob(
        job_id=job_id,
        name=f"j{job_id}",
        user=user,
        account=account,
        partition="train",
        state=state,
        node_names=tuple(nodes),
        n_gpus_allocated=gpus,
        gpu_indices=tuple(idx),
        exclusive_flag=exclusive,
    )


def _snapshot() -> SlurmSnapshot:
    jobs = [
        _job(1, "running", ["n0"], "llm", 8),  # the whole node
        _job(2, "running", ["n1"], "eval", 4, idx=[(4, 5, 6, 7)]),  # second half of n1 (gres_detail)
        _job(3, "running", ["n1", "n2"], "eval", 4, idx=[(0, 1), (0, 1)], user="bob"),
        _job(4, "pending", [], "llm", 8),
        _job(5, "completed", ["n2"], "llm", 2),
        _job(6, "running", ["gone"], "llm", 8),  # a node the site does not have
    ]
    nodes = [SlurmNode(name=n, state="allocated", node_id=i) for i, n in enumerate(NODES)]
    return SlurmSnapshot(jobs=jobs, nodes=nodes, read_at=datetime(2026, 1, 1, tzinfo=UTC))


def test_owners_follow_gres_detail_and_skip_what_holds_nothing():
    o = gpu_owners(_snapshot(), NODE_GPUS, NODES)
    assert o.job_ids == ("1", "2", "3") and o.teams == ("llm", "eval", "eval")
    assert o.gpu_row.tolist() == [0] * 8 + [2, 2, -1, -1, 1, 1, 1, 1] + [2, 2, -1, -1]


def test_attribute_one_interval():
    o = gpu_owners(_snapshot(), NODE_GPUS, NODES)
    power = np.full(20, 500.0)
    power[9] = np.nan  # job 3's second GPU on n1 is not metered
    state = np.zeros(20, np.int8)
    state[[0, 1]] = GPU_THROTTLED
    state[12] = GPU_DOWN
    u = attribute(o, power, state, 3600.0)
    assert u.gpu_s.tolist() == [8 * 3600.0, 4 * 3600.0, 4 * 3600.0]
    assert u.energy_j.tolist() == [8 * 500 * 3600.0, 4 * 500 * 3600.0, 3 * 500 * 3600.0]
    assert u.throttled_gpu_s.tolist() == [2 * 3600.0, 0.0, 0.0]
    assert u.down_gpu_s.tolist() == [0.0, 3600.0, 0.0]
    assert u.unmetered_gpu_s.tolist() == [0.0, 0.0, 3600.0]
    jobs = {r["job_id"]: r for r in by_job(u)}
    assert (
        jobs["1"]["allocated_gpu_h"] == 8.0
        and jobs["1"]["gpu_energy_kwh"] == 4.0
        and jobs["1"]["throttled_frac"] == 0.25
    )
    assert jobs["3"]["user"] == "bob" and jobs["3"]["unmetered_gpu_h"] == 1.0
    teams = by_team(u)
    assert [t["team"] for t in teams] == ["eval", "llm"] or [t["team"] for t in teams] == ["llm", "eval"]
    eval_ = next(t for t in teams if t["team"] == "eval")
    assert eval_["n_jobs"] == 2 and eval_["allocated_gpu_h"] == 8.0 and eval_["gpu_energy_kwh"] == pytest.approx(3.5)
    json.dumps(teams, allow_nan=False)


def test_bad_arrays_are_refused_with_one_line():
    o = gpu_owners(_snapshot(), NODE_GPUS, NODES)
    with pytest.raises(ValueError, match="one value per GPU"):
        attribute(o, np.zeros(3), np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="0 or more seconds"):
        attribute(o, np.zeros(20), np.zeros(20), float("nan"))


def test_ledger_integrates_ticks_across_reads():
    snap = _snapshot()
    led = Ledger(keep_ended=1)
    t0 = snap.read_at
    led.set_owners(gpu_owners(snap, NODE_GPUS))
    power, state = np.full(20, 100.0), np.zeros(20, np.int8)
    for k in range(11):  # ten intervals of 1 s
        led.observe(t0 + timedelta(seconds=k), power, state)
    led.observe(t0 + timedelta(seconds=500), power, state)  # a gap: not charged
    snap.jobs = [j for j in snap.jobs if j.job_id != 1]  # job 1 ended
    led.set_owners(gpu_owners(snap, NODE_GPUS))
    led.observe(t0 + timedelta(seconds=501), power, state)
    rep = led.report()
    jobs = {r["job_id"]: r for r in rep["jobs"]}
    assert jobs["1"]["allocated_gpu_h"] == pytest.approx(80 / 3600) and jobs["2"]["allocated_gpu_h"] == pytest.approx(
        44 / 3600
    )
    led.set_owners(gpu_owners(snap, NODE_GPUS))  # a second read without job 1: dropped
    assert "1" not in {r["job_id"] for r in led.report()["jobs"]}
    json.dumps(rep, allow_nan=False)
