"""The live twin on the demo site: synthetic readings in, snapshots, frames and alerts out."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ingest.live.episodes import timing
from ingest.live.runtime import LiveSetupError, build_hub, start_hub
from ingest.live.scheduler import build_scheduler
from ingest.live.tick_loop import enforced_limits_w
from ingest.synthetic.faults import FaultError
from twin.engine.snapshot import GPU_DOWN

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'live.db'}"


def run(hub, seconds):
    for i in range(seconds):
        snap = hub.step(T0 + timedelta(seconds=i))
    return snap


def test_twin_follows_the_synthetic_plant_and_records_frames(db):
    hub = build_hub("demo", db, seed=3, start=T0, record_every_s=1.0)
    snap = run(hub, 10)
    truth = hub.ticker.synthetic.last_truth
    # the twin sees only noisy readings, yet lands within a few percent of the plant
    assert abs(snap.it_power_mw - truth.it_power_mw) / truth.it_power_mw < 0.03
    assert np.nanmax(np.abs(hub.ticker.predicted_gpu_temp_c - truth.gpu_temp_c)) < 2.0
    assert snap.jobs and snap.jobs[0].tokens_per_s > 0 and 0 < snap.jobs[0].mfu_frac < 1
    history = hub.view.rack_history(3, window_s=60)
    assert set(history["metric"]) >= {"gpu_temp_c", "gpu_power_w"}
    assert history["ts"].nunique() == 10 and history["gpu"].nunique() == 64
    trend = hub.view.trend(60)
    assert len(trend) == 10 and (trend["it_power_mw"] > 0).all()
    assert hub.view.source_ages(snap.ts.timestamp()) == {"synthetic": 0.0}


def test_faults_raise_alerts_once_and_clear_them(db):
    hub = build_hub("demo", db, start=T0, faults=("pump:H1-R01-K04-CDU@2+3", "xid:h1-r01-k02-n0/5@1=79"))
    run(hub, 4)
    active = {a["entity_name"]: a for a in hub.view.alerts()}
    assert active["H1-R01-K04-CDU"]["severity"] == "warning"
    assert "1 of 2 pumps" in active["H1-R01-K04-CDU"]["message"]
    assert active["h1-r01-k02-n0/gpu5"]["severity"] == "critical"
    snap = hub.view.latest()
    gpu = int(np.flatnonzero((hub.state.gpu_node == 8) & (hub.state.gpu_index == 5))[0])
    assert snap.gpu_state[gpu] == GPU_DOWN and snap.last_xid_code[gpu] == 79
    assert snap.jobs[0].tokens_per_s == 0  # one GPU down stalls the synchronous job
    last_s = 4  # the pump's last second down (back at t = 5 s): the episode clears once its clear hold passed
    for i in range(4, last_s + int(timing("pump").clear_s)):
        hub.step(T0 + timedelta(seconds=i))
        assert "H1-R01-K04-CDU" in {a["entity_name"] for a in hub.view.alerts()}
    hub.step(T0 + timedelta(seconds=last_s + timing("pump").clear_s))
    names = {a["entity_name"] for a in hub.view.alerts()}
    assert "H1-R01-K04-CDU" not in names
    history = [a for a in hub.view.alerts(active_only=False) if a["entity_name"] == "H1-R01-K04-CDU"]
    assert len(history) == 1 and history[0]["cleared_at"] is not None


def test_acknowledge_and_silence(db):
    hub = build_hub("demo", db, start=T0, faults=("cdu:H1-R02-K01-CDU",))
    run(hub, 2)
    alert = next(a for a in hub.view.alerts() if a["entity_name"] == "H1-R02-K01-CDU")
    hub.alert_actions.acknowledge(alert["id"])
    hub.alert_actions.silence(alert["id"], 600)
    again = next(a for a in hub.view.alerts() if a["id"] == alert["id"])
    assert again["acknowledged"] and again["silenced_until"] > datetime.now(UTC)
    with pytest.raises(KeyError, match="no alert with id 999999"):
        hub.alert_actions.acknowledge(999999)
    with pytest.raises(ValueError, match="positive"):
        hub.alert_actions.silence(alert["id"], 0)


def test_bad_faults_and_sources_are_named(db):
    with pytest.raises(FaultError, match="no cdu target named 'H9-CDU'"):
        build_hub("demo", db, faults=("cdu:H9-CDU",))
    with pytest.raises(FaultError, match="unknown kind 'meteor'"):
        build_hub("demo", db, faults=("meteor:H1",))
    with pytest.raises(LiveSetupError, match="source 'carrier-pigeon': expected KIND=TARGET"):
        build_hub("demo", db, sources=("carrier-pigeon",))


@pytest.mark.slow
def test_synthetic_stream_is_reproducible(db, tmp_path):
    a = build_hub("demo", db, seed=7, start=T0)
    b = build_hub("demo", f"sqlite:///{tmp_path / 'other.db'}", seed=7, start=T0)
    sa, sb = run(a, 3), run(b, 3)
    np.testing.assert_array_equal(sa.gpu_temp_c, sb.gpu_temp_c)
    np.testing.assert_array_equal(sa.gpu_power_w, sb.gpu_power_w)


def test_scheduler_runs_each_job_once_at_a_time(db):
    hub = build_hub("demo", db, start=T0)
    scheduler = build_scheduler(hub.jobs_for_scheduler())
    scheduler.start(paused=True)
    try:
        job = scheduler.get_job("twin-step")
        assert job.max_instances == 1 and job.coalesce and job.misfire_grace_time == 5.0
        job.func()  # jobs are plain callables
        assert hub.view.latest() is not None
    finally:
        scheduler.shutdown()


def test_start_hub_steps_once_and_stops_cleanly(db):
    runtime = start_hub("demo", db)
    try:
        assert runtime.leading and runtime.hub.view.latest() is not None
        second = start_hub("demo", db)
        assert not second.leading and "following its live state" in second.notes[0]
        second.stop()
    finally:
        runtime.stop()


def test_shards_split_frames_and_rack_alerts(tmp_path):
    url = f"sqlite:///{tmp_path / 'sharded.db'}"
    faults = ("xid:h1-r01-k01-n0/0=79", "xid:h1-r02-k01-n0/0=79")  # racks 0 and 8: arrays 0 and 1
    hubs = [build_hub("demo", url, start=T0, faults=faults, shard=(i, 2), record_every_s=1.0) for i in range(2)]
    for i in range(3):
        for hub in hubs:
            hub.step(T0 + timedelta(seconds=i))
    history = hubs[0].view.rack_history(9, window_s=60)  # rack 9 is written by shard 1
    assert history["value"].notna().all() and history["ts"].nunique() == 3
    racks = sorted(a["entity_name"] for a in hubs[0].view.alerts() if a["entity_kind"] == "rack")
    assert racks == ["H1-R01-K01", "H1-R02-K01"]  # each raised once, by the shard owning it
    with pytest.raises(LiveSetupError, match="shard '2/2'"):
        start_hub("demo", url, shard="2/2")


def test_frames_are_recorded_at_their_cadence_and_pruned_after_retention(db):
    hub = build_hub("demo", db, start=T0, record_every_s=2.0, retention_s=5.0)
    run(hub, 9)
    ts, _ = hub.recorder.store.read_window("gpu", np.arange(4), T0, T0 + timedelta(seconds=60))
    assert [int((t - ts[0]) / np.timedelta64(1, "s")) for t in ts] == [0, 2, 4, 6, 8]
    assert hub.prune() > 0  # the frames older than 8 s − 5 s
    ts, _ = hub.recorder.store.read_window("gpu", np.arange(4), T0, T0 + timedelta(seconds=60))
    assert [int((t - ts[0]) / np.timedelta64(1, "s")) for t in ts] == [0, 2, 4]


@pytest.mark.slow
def test_a_degrading_interface_shows_as_measured_above_predicted(db):
    hub = build_hub("demo", db, start=T0, faults=("tim:H1-R01-K03=60",))  # r_th doubles in 60 s
    run(hub, 90)
    rack = hub.state.gpu_rack == 2
    residual = hub.view.latest().gpu_temp_c - hub.ticker.predicted_gpu_temp_c
    assert residual[rack].mean() > 5 and abs(residual[~rack].mean()) < 1


def test_gpu_health_follows_the_measured_numbers(db):
    """A rack measured at 90 °C is throttled; one drawing ~0 W is down — whatever the twin's model says."""
    from ingest.live.hub import LiveHub
    from ingest.store.db import open_database
    from twin.engine.snapshot import GPU_OK, GPU_THROTTLED
    from twin.site.load import load_site

    state = load_site("demo")
    hub = LiveHub(state, open_database(db), record=False, start=T0)
    hub.step(T0)
    hot = np.flatnonzero(state.gpu_rack == 3)
    dead = np.flatnonzero(state.gpu_rack == 4)
    held_s = int(max(timing("gpu_hot").for_s, timing("gpu_down").for_s)) + 1  # the alerts' minimum durations
    for i in range(1, held_s + 1):
        t1 = T0 + timedelta(seconds=i)
        hub.ticker.buffer.update("gpu", "gpu_temp_c", hot, np.full(hot.size, 90.5), t1.timestamp())
        hub.ticker.buffer.update("gpu", "gpu_temp_c", dead, np.full(dead.size, 90.5), t1.timestamp())
        hub.ticker.buffer.update("gpu", "gpu_power_w", dead, np.full(dead.size, 2.0), t1.timestamp())
        snap = hub.step(t1)
    assert (snap.gpu_state[hot] == GPU_THROTTLED).all() and (snap.throttle_frac[hot] <= 0.5).all()
    assert (snap.gpu_state[dead] == GPU_DOWN).all() and (snap.gpu_power_w[dead] == 0).all()
    others = np.setdiff1d(np.arange(state.n_gpus), np.concatenate([hot, dead]))
    assert (snap.gpu_state[others] == GPU_OK).all()
    rules = {a["key"] for a in hub.view.alerts()}
    assert "gpu_hot:rack:3" in rules and "gpu_down:rack:4" in rules


def test_enforced_limits_are_none_unless_a_gpu_is_limited_below_its_tdp():
    tdp = np.array([700.0, 700.0, 1200.0])
    assert enforced_limits_w(np.full(3, np.nan), tdp) is None  # no reading: every GPU at its TDP
    assert enforced_limits_w(np.array([700.0, np.nan, 1200.0]), tdp) is None
    capped = enforced_limits_w(np.array([500.0, np.nan, 1200.0]), tdp)
    assert capped is not None and capped.tolist() == [500.0, 700.0, 1200.0]  # the unread GPU at its TDP
