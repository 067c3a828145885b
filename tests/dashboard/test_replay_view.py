"""The replay view: a shipped incident at one instant shows what was recorded then."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from dashboard.views.registry import ViewUnavailable, resolve
from dashboard.views.replay import incident_recording
from twin.engine.view import View

PUMP = "colossus-cdu-pump-failure"
T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


def _view(at: datetime):
    return resolve(f"replay:{PUMP}@{at:%Y-%m-%dT%H:%M:%SZ}", None)


def test_replay_key_resolves_to_the_nearest_recorded_frame():
    view = _view(T0 + timedelta(seconds=182))  # frames every 5 s: 180 s is nearest
    assert isinstance(view, View) and not view.is_live
    assert view.latest().ts == T0 + timedelta(seconds=180)
    assert view.key == f"replay:{PUMP}@2024-07-22T15:03:00Z" and view.label == f"replay · {PUMP}"
    assert view.site_name == "colossus" and view.latest_tick().snapshot is view.latest()


def test_snapshot_holds_the_recorded_values():
    rec = incident_recording(PUMP)
    bundle = rec.bundle
    view = _view(T0 + timedelta(seconds=180))
    snap, ts = view.latest(), np.datetime64("2024-07-22T15:03:00")
    cdu = bundle.frame("cdu")
    at = cdu[cdu["ts"].dt.tz_localize(None) == ts].set_index("cdu_id")
    np.testing.assert_allclose(snap.coolant_flow_lpm, at["coolant_flow_lpm"].sort_index().to_numpy(), rtol=1e-6)
    np.testing.assert_array_equal(snap.pumps_running_count, at["pumps_running_count"].sort_index().to_numpy())
    gpu = bundle.frame("gpu")
    g = gpu[gpu["ts"].dt.tz_localize(None) == ts]
    np.testing.assert_allclose(snap.gpu_temp_c[g["gpu_id"].to_numpy()], g["gpu_temp_c"].to_numpy(), rtol=1e-6)
    rack = bundle.frame("rack")
    r = rack[rack["ts"].dt.tz_localize(None) == ts].set_index("rack_id").sort_index()
    np.testing.assert_allclose(snap.rack_power_kw, r["rack_power_kw"].to_numpy(), rtol=1e-6)
    elsewhere = np.setdiff1d(np.arange(view.state.n_gpus), g["gpu_id"].to_numpy())[:500]
    np.testing.assert_allclose(
        snap.gpu_temp_c[elsewhere], r["rack_mean_gpu_temp_c"].to_numpy()[view.state.gpu_rack[elsewhere]], rtol=1e-6
    )
    site = bundle.frame("site")
    assert snap.it_power_mw == pytest.approx(float(site[site["ts"].dt.tz_localize(None) == ts]["it_power_mw"].iloc[0]))


def test_pumps_are_down_after_the_fault_and_not_before():
    cdu = incident_recording(PUMP).state.cdu_name.index("H1-R01-K01-CDU")
    assert _view(T0 + timedelta(seconds=30)).latest().pumps_running_count[cdu] == 2
    assert _view(T0 + timedelta(seconds=90)).latest().pumps_running_count[cdu] == 0
    assert _view(T0 + timedelta(seconds=300)).latest().pumps_running_count[cdu] == 1


def _pump(alerts):
    return [a for a in alerts if a["metric"] == "pumps_running_count"]


def test_events_open_at_the_instant_become_alerts():
    before = _view(T0 + timedelta(seconds=55)).alerts()
    assert not [a for a in before if a["metric"] == "pumps_running_count"]
    after = _view(T0 + timedelta(seconds=65)).alerts()
    pump = _pump(after)
    assert len(pump) == 1
    alert = pump[0]
    assert alert["severity"] == "critical" and alert["entity_name"] == "H1-R01-K01-CDU"
    assert alert["ts"] == T0 + timedelta(seconds=60) and not alert["acknowledged"] and alert["cleared_at"] is None
    assert [a["ts"] for a in after] == sorted((a["ts"] for a in after), reverse=True)
    # one pump stays failed to the end: the alert is still open at 300 s, and every alert shown is the
    # latest opening of its entity and metric, not cleared by the instant
    at = T0 + timedelta(seconds=300)
    later = _view(at).alerts()
    assert [a["ts"] for a in _pump(later)] == [T0 + timedelta(seconds=60)]
    events = incident_recording(PUMP).events
    for a in later:
        same = events[
            (events["entity_kind"] == a["entity_kind"])
            & (events["entity_id"] == a["entity_id"])
            & (events["metric"] == a["metric"])
            & (events["ts"] <= at)
        ]
        assert same["ts"].max().to_pydatetime() == a["ts"] and (same["severity"].iloc[-1] != "CLEARED")
    assert len({(a["entity_kind"], a["entity_id"], a["metric"]) for a in later}) == len(later)


def test_trend_and_histories_stop_at_the_instant():
    view = _view(T0 + timedelta(seconds=120))
    trend = view.trend(3600)
    assert trend.index[0] == T0 and trend.index[-1] == T0 + timedelta(seconds=120) and len(trend) == 25
    assert np.isfinite(trend["it_power_mw"]).all()
    rack = view.state.rack_name.index("H1-R01-K01")
    hist = view.rack_history(rack, 600)
    assert list(hist.columns) == ["ts", "gpu", "metric", "value"] and hist["ts"].max() == T0 + timedelta(seconds=120)
    assert set(hist["gpu"]) == set(np.flatnonzero(view.state.gpu_rack == rack))
    cdu = view.cdu_history(view.state.cdu_name.index("H1-R01-K01-CDU"), 600)
    assert cdu.index[-1] == T0 + timedelta(seconds=120) and cdu["pumps_running_count"].iloc[-1] == 1
    assert (
        cdu["pumps_running_count"].min() == 0 and cdu["pumps_running_count"].iloc[0] == 2
    )  # stopped at 60 s, one back at 115 s
    assert [j.spec.name for j in view.placed_jobs()] == ["colossus-405b-24k"]  # the recorded job
    assert view.job_timeline("x") == [] and view.source_ages() == {}


def test_unknown_incident_is_a_clear_message():
    with pytest.raises(ViewUnavailable, match="no such incident 'nope'.*colossus-cdu-pump-failure"):
        resolve("replay:nope@2024-07-22T15:00:00Z", None)


def test_generation_capacity_counts_the_sources_not_failed():
    gen = "colossus-generator-trip"
    rec = incident_recording(gen)
    s = rec.state
    before = resolve(f"replay:{gen}@2024-07-22T15:00:30Z", None).latest()
    after = resolve(f"replay:{gen}@2024-07-22T15:02:00Z", None).latest()
    failed = rec.rec.site_rows[rec.frame_index(T0 + timedelta(seconds=120))]["failed_sources"]
    assert len(failed) > 0
    assert after.generation_capacity_mw == pytest.approx(
        before.generation_capacity_mw - float(s.source_capacity_mw[list(failed)].sum())
    )


def test_the_recorded_jobs_phases_make_the_replays_swing():
    """The recorded 405B job's phases at the recorded GPU power: its swing and the pipeline's ramp, not NaN."""
    view = _view(T0 + timedelta(seconds=180))
    snap = view.latest()
    job = view.placed_jobs()[0]
    assert np.isfinite(snap.swing_amplitude_mw) and snap.swing_amplitude_mw > 1.0
    # bounded by the job's GPUs swinging from idle to TDP, with PSU losses
    assert snap.swing_amplitude_mw < job.gpu_ids.size * 700e-6 * 1.2
    assert 0.0 < snap.swing_ramp_mw_per_s < 5.0 * snap.swing_amplitude_mw  # fill and drain, not a 0.1 s edge


def test_replayed_alerts_are_aged_at_the_replays_instant(page_module):
    """A replayed alert is seconds old at its instant, not "20693.6 h open" by today's clock."""
    from dashboard.shell.status import view_now

    alerts_page = page_module("alerts")
    view = _view(T0 + timedelta(seconds=90))
    assert view_now(view) == view.latest().ts
    shown = alerts_page.alerts_view(view, list(alerts_page.SEVERITIES), False)
    text = str(shown["active"])
    assert "30.0 s" in text or "30 s" in text, text[:2000]  # the pump alert, raised at T0 + 60 s
    assert not re.search(r"\d h'", text), text[:2000]  # no age in hours (format_age's "20693.6 h")


def test_a_cleared_alert_leaves_the_replay_at_its_clearing():
    """The generator trip's "facility load exceeds generation" opens at the trip and clears once the cap holds."""
    gen = "colossus-generator-trip"
    events = incident_recording(gen).events
    rows = events[events["message"].str.contains("exceeds generation", regex=False)].iloc[:2]
    assert list(rows["severity"]) == ["critical", "CLEARED"]
    opened, cleared = (t.to_pydatetime() for t in rows["ts"])

    def shown(at, active_only=True):
        view = resolve(f"replay:{gen}@{at:%Y-%m-%dT%H:%M:%SZ}", None)
        return [a for a in view.alerts(active_only) if "exceeds generation" in a["message"]]

    assert len(shown(opened + timedelta(seconds=5))) == 1
    assert shown(cleared + timedelta(seconds=5)) == []
    past = shown(cleared + timedelta(seconds=5), active_only=False)
    assert len(past) == 1 and past[0]["cleared_at"] == cleared and past[0]["ts"] == opened
    assert opened.timestamp() in {t.timestamp() for t in incident_recording(gen).event_times()}
    assert cleared not in incident_recording(gen).event_times()
