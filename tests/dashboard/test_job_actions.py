"""A stalled or slowed job's causes, the hosts to drain, and the throughput after draining."""

from dataclasses import replace

import numpy as np
import pytest

from dashboard.analysis.job_actions import diagnose, expected_after_drain
from tests.dashboard.hostlists import expand
from twin.engine.snapshot import GPU_DOWN
from twin.engine.tick import PlacedJob, TickInputs, TwinEngine
from twin.site.load import DATA_DIR, load_site
from twin.training.jobfile import load_job
from twin.training.sitejob import evaluate_site_job


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


@pytest.fixture(scope="module")
def spec():
    return load_job(DATA_DIR / "jobs" / "demo-70b-1k.toml")


@pytest.fixture(scope="module")
def nominal(demo, spec):
    return TwinEngine(demo).tick(1.0, TickInputs(jobs=[PlacedJob(spec, np.arange(demo.n_gpus))]))


def with_job(demo, spec, snap):
    """The snapshot with its job re-evaluated on the snapshot's own state."""
    throttle = np.where(snap.gpu_state == GPU_DOWN, 0.0, snap.throttle_frac)
    status = evaluate_site_job(demo, spec, np.arange(demo.n_gpus), throttle, snap.link_up_flag).status
    return replace(snap, jobs=[status])


def test_a_down_gpu_stalls_the_job_and_its_host_is_drained(demo, spec, nominal):
    state = nominal.gpu_state.copy()
    xid = nominal.last_xid_code.copy()
    g = int(np.flatnonzero(demo.gpu_rack == 2)[5])
    state[g], xid[g] = GPU_DOWN, 79
    snap = with_job(demo, spec, replace(nominal, gpu_state=state, last_xid_code=xid))
    diag = diagnose(demo, snap, snap.jobs[0])
    assert diag.condition == "stalled"
    assert diag.causes[0].kind == "gpus_down" and diag.causes[0].entity_name == demo.rack_name[2]
    assert "XID 79" in diag.causes[0].reason
    assert diag.drain_hosts == [demo.node_name[demo.gpu_node[g]]]
    assert expand(diag.drain_hostlist) == diag.drain_hosts and diag.drain_command.startswith("scontrol update")
    after = expected_after_drain(demo, snap, spec, np.arange(demo.n_gpus), diag)
    assert after == pytest.approx(nominal.jobs[0].tokens_per_s, rel=1e-6)  # spares restore the healthy rate


def test_a_hot_rack_is_a_slow_rack_with_its_reason(demo, spec, nominal):
    temp = nominal.gpu_temp_c.copy()
    throttle = nominal.throttle_frac.copy()
    rack5 = demo.gpu_rack == 5
    temp[rack5], throttle[rack5] = 90.4, 0.5
    snap = with_job(demo, spec, replace(nominal, gpu_temp_c=temp, throttle_frac=throttle))
    diag = diagnose(demo, snap, snap.jobs[0])
    assert diag.condition == "slowed"
    slow = diag.causes[0]
    assert slow.kind == "slow_rack" and slow.entity_name == demo.rack_name[5] and slow.speed_frac == 0.5
    assert slow.reason == "thermal slowdown (hottest 90.4 °C)"
    assert len(diag.drain_hosts) == 8
    after = expected_after_drain(demo, snap, spec, np.arange(demo.n_gpus), diag)
    assert after > snap.jobs[0].tokens_per_s * 1.5


def test_a_cut_off_leaf_is_named_and_its_hosts_drained(demo, spec, nominal):
    link_up_flag = nominal.link_up_flag.copy()
    link_up_flag[demo.link_a == 0] = False
    snap = with_job(demo, spec, replace(nominal, link_up_flag=link_up_flag))
    diag = diagnose(demo, snap, snap.jobs[0])
    assert diag.condition == "stalled"
    assert [c.kind for c in diag.causes] == ["leaf_cut"] and diag.causes[0].entity_name == demo.switch_name[0]
    assert set(diag.drain_hosts) == {demo.node_name[n] for n in demo.gpu_node[demo.gpu_leaf == 0]}
    assert expected_after_drain(demo, snap, spec, np.arange(demo.n_gpus), diag) > 0


def test_a_healthy_job_has_nothing_to_drain(demo, nominal):
    diag = diagnose(demo, nominal, nominal.jobs[0])
    assert diag.condition == "running" and not diag.causes and not diag.drain_hosts and diag.drain_command == ""
