"""Replayed alerts open at their opening and close at their clearing; "next event" steps through openings only."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from dashboard.components.data_age import format_age
from dashboard.views.replay import IncidentRecording, ReplayView, alert_episodes, open_at
from ingest.replay.bundle import CLEARED
from ingest.replay.session import T0, RecordSpec, record_synthetic

PUMP_CDU = "H1-R01-K01-CDU"


@pytest.fixture(scope="module")
def blip(tmp_path_factory) -> IncidentRecording:
    """A demo recording: both pumps of one CDU stop at 20 s and run again at 50 s; 150 s, a frame every 5 s."""
    spec = RecordSpec(
        "demo", "pump-blip", faults=(f"pump:{PUMP_CDU}@20+30=2",), duration_s=150, tick_s=1, frame_every_s=5
    )
    return IncidentRecording(record_synthetic(spec, tmp_path_factory.mktemp("incidents")))


def _pump(alerts: list[dict]) -> list[dict]:
    return [a for a in alerts if a["entity_name"] == PUMP_CDU and a["metric"] == "pumps_running_count"]


def _clearing(rec: IncidentRecording):
    ev = rec.events
    rows = ev[(ev["entity_name"] == PUMP_CDU) & (ev["metric"] == "pumps_running_count") & (ev["severity"] == CLEARED)]
    assert len(rows) == 1, rows
    return rows["ts"].iloc[0].to_pydatetime()


@pytest.mark.slow
def test_a_replayed_alert_is_open_from_its_opening_to_its_clearing(blip):
    cleared = _clearing(blip)
    assert T0 + timedelta(seconds=50) <= cleared < T0 + timedelta(seconds=100)
    assert _pump(ReplayView(blip, T0 + timedelta(seconds=10)).alerts(active_only=False)) == []
    during = _pump(ReplayView(blip, T0 + timedelta(seconds=30)).alerts())
    assert len(during) == 1 and during[0]["cleared_at"] is None
    assert T0 + timedelta(seconds=20) <= during[0]["ts"] <= T0 + timedelta(seconds=30)
    after = ReplayView(blip, cleared + timedelta(seconds=5))
    assert _pump(after.alerts()) == []  # no longer open …
    past = _pump(after.alerts(active_only=False))  # … but among the replay's cleared alerts
    assert len(past) == 1 and past[0]["cleared_at"] == cleared and past[0]["ts"] == during[0]["ts"]


@pytest.mark.slow
def test_no_alert_shown_open_has_cleared_by_the_instant(blip):
    for i in range(0, len(blip.rec.ts), 3):
        view = ReplayView(blip, blip.rec.ts[i])
        for alert in view.alerts(active_only=False):
            assert alert["ts"] <= view.at
            assert alert["cleared_at"] is None or alert["ts"] <= alert["cleared_at"] <= view.at


def test_event_times_are_openings_only(blip):
    times = blip.event_times()
    openings = blip.events[blip.events["severity"] != CLEARED]
    assert times == sorted({t.to_pydatetime() for t in openings["ts"]})
    assert _clearing(blip) not in times or (openings["ts"] == pd.Timestamp(_clearing(blip))).any()


def test_cleared_alerts_age_on_the_replays_clock(page_module, blip):
    """The alerts page of a replay after the clearing: the pump alert is past, lasting its recorded duration."""
    alerts_page = page_module("alerts")
    cleared = _clearing(blip)
    view = ReplayView(blip, cleared + timedelta(seconds=10))
    shown = alerts_page.alerts_view(view, list(alerts_page.SEVERITIES), True)
    assert PUMP_CDU not in str(shown["active"])
    opened = _pump(view.alerts(False))[0]["ts"]
    lasted = (cleared - opened).total_seconds()
    assert 30 <= lasted <= 60  # the 30 s outage and the rule's clear hold, not an age by today's clock
    assert PUMP_CDU in str(shown["past"]) and f"'{format_age(lasted)}'" in str(shown["past"]), str(shown["past"])[:2000]


def test_next_event_skips_frames_where_only_clearings_happened(page_module, blip):
    replay_page = page_module("replay")
    frames = replay_page.event_frames(blip)
    clear_frame = blip.frame_index(_clearing(blip))
    opened_at = {blip.frame_index(t) for t in blip.event_times()}
    assert frames == sorted(opened_at)
    assert (clear_frame in frames) == (clear_frame in opened_at)


def test_episodes_pair_each_opening_with_its_next_clearing():
    ts = pd.to_datetime(
        [
            "2024-07-22T15:00:00Z",
            "2024-07-22T15:00:05Z",
            "2024-07-22T15:00:10Z",
            "2024-07-22T15:00:15Z",
            "2024-07-22T15:00:20Z",
        ]
    ).astype("datetime64[ms, UTC]")
    ev = pd.DataFrame(
        {
            "ts": ts,
            "severity": [CLEARED, "warning", "critical", CLEARED, "warning"],
            "entity_kind": ["cdu", "cdu", "rack", "cdu", "cdu"],
            "entity_id": [0, 0, 3, 0, 0],
            "metric": ["m", "m", "t", "m", "m"],
        }
    )
    ep = alert_episodes(ev)
    # the leading clearing (its opening before the window) is dropped; the rack alert never clears
    assert list(ep["severity"]) == ["warning", "critical", "warning"]
    assert ep["cleared_ts"].iloc[0] == ts[3] and ep["cleared_ts"].iloc[1:].isna().all()


def test_without_clearings_an_alert_shows_once_at_its_latest_opening():
    """A bundle written before clearings were logged: a repeated opening replaces the earlier one."""
    ts = pd.to_datetime(
        ["2024-07-22T15:00:00Z", "2024-07-22T15:00:05Z", "2024-07-22T15:00:10Z", "2024-07-22T15:00:15Z"]
    ).astype("datetime64[ms, UTC]")
    ev = pd.DataFrame(
        {
            "ts": ts,
            "severity": ["warning", "critical", "warning", "warning"],
            "entity_kind": ["site", "cdu", "site", "site"],
            "entity_id": [0, 2, 0, 0],
            "metric": ["g", "p", "g", "g"],
        }
    )
    shown = open_at(alert_episodes(ev), ts[2].to_pydatetime())
    assert list(shown["ts"]) == [ts[2], ts[1]]  # newest first; the site warning at its opening of 10 s
    ev.loc[2, "severity"] = CLEARED  # with a clearing at 10 s instead: closed at 10 s, open again at 15 s
    ep = alert_episodes(ev)
    assert list(open_at(ep, ts[2].to_pydatetime())["ts"]) == [ts[1]]
    assert list(open_at(ep, ts[3].to_pydatetime())["ts"]) == [ts[3], ts[1]]
