"""The view registry, the scenario view, the live hub's paired snapshot/detail, and pages on any view."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime

import numpy as np
import pytest

from dashboard.views.context import ViewSelection, selection_from_url
from dashboard.views.registry import ViewUnavailable, resolve, screen_for
from dashboard.views.scenario_files import SCENARIO_DIR, scenario_view
from ingest.live.trend import TREND_COLUMNS
from twin.engine.snapshot import GPU_DOWN
from twin.engine.view import View, ViewTick
from twin.scenario.load import load_scenario

DEMO_SCENARIO = "demo-cdu-loss"


@pytest.fixture(scope="module")
def scenario(demo_state):
    return scenario_view(demo_state, DEMO_SCENARIO)


def test_live_key_resolves_to_the_hub(demo_view):
    for key in (None, "", "live"):
        assert resolve(key, demo_view) is demo_view
    assert isinstance(demo_view, View)


def test_scenario_view_is_a_view_at_the_scenario_time(demo_state, scenario):
    assert isinstance(scenario, View) and not scenario.is_live
    assert scenario.key == f"scenario:{DEMO_SCENARIO}" and scenario.label == "scenario · CDU loss in rack R01-K01"
    expected = load_scenario(SCENARIO_DIR / f"{DEMO_SCENARIO}.toml", demo_state)
    tick = scenario.latest_tick()
    assert isinstance(tick, ViewTick) and tick.detail is not None
    assert tick.snapshot.ts == expected.time == datetime(2026, 7, 15, 14, tzinfo=UTC)
    assert scenario.latest() is tick.snapshot
    assert scenario.source_ages() == {}


def test_scenario_view_runs_the_twin_under_the_scenario(demo_state, scenario):
    snap = scenario.latest()
    cdu = demo_state.cdu_name.index("H1-R01-K01-CDU")
    assert snap.pumps_running_count[cdu] == 0
    racks = np.flatnonzero(demo_state.rack_cdu == cdu)
    others = np.flatnonzero(demo_state.rack_cdu != cdu)
    gpus = np.isin(demo_state.gpu_rack, racks)
    # without coolant flow the rack's GPUs shut down (or at least run hotter than any other rack)
    assert (snap.gpu_state[gpus] == GPU_DOWN).all() or np.nanmax(snap.rack_max_gpu_temp_c[racks]) > np.nanmax(
        snap.rack_max_gpu_temp_c[others]
    )
    assert snap.jobs and snap.jobs[0].name == demo_state.default_job  # the job is evaluated on the settled state


def test_scenario_trend_is_the_settling_ticks(scenario):
    trend = scenario.trend(3600)
    assert list(trend.columns) == list(TREND_COLUMNS)
    assert len(trend) == 10 and trend.index[-1] == scenario.latest().ts  # 600 s in minute steps
    assert np.isfinite(trend["it_power_mw"]).all() and np.isfinite(trend["tokens_per_s"].iloc[-1])
    assert len(scenario.trend(120)) == 3


def test_scenario_alerts_come_from_the_alert_rules(demo_state, scenario):
    alerts = scenario.alerts()
    racks = {a["entity_name"] for a in alerts if a["entity_kind"] == "rack"}
    assert any(name.startswith("H1-R01-K01") for name in racks), racks
    assert all(not a["acknowledged"] and a["cleared_at"] is None for a in alerts)
    history = scenario.rack_history(0)
    assert history.empty and list(history.columns) == ["ts", "gpu", "metric", "value"]
    with pytest.raises(ValueError, match="rack id"):
        scenario.rack_history(demo_state.n_racks)


def test_scenario_views_are_cached_until_the_file_changes(demo_state, tmp_path):
    shutil.copy(SCENARIO_DIR / f"{DEMO_SCENARIO}.toml", tmp_path / "mine.toml")
    first = scenario_view(demo_state, "mine", tmp_path)
    assert scenario_view(demo_state, "mine", tmp_path) is first
    path = tmp_path / "mine.toml"
    path.write_text(path.read_text().replace('cdus_failed = ["H1-R01-K01-CDU"]', 'cdus_failed = ["H1-R01-K02-CDU"]'))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    second = scenario_view(demo_state, "mine", tmp_path)
    assert second is not first
    assert second.latest().pumps_running_count[demo_state.cdu_name.index("H1-R01-K02-CDU")] == 0


@pytest.mark.parametrize(
    "key, message",
    [
        ("scenario:nope", "no scenario 'nope' (scenarios: colossus-cdu-loss"),
        ("scenario:colossus-generator-trip", "cannot run on site 'demo'"),
        ("replay:pump-trip@2026-07-15T14:00:00Z", "no such incident 'pump-trip'"),
        ("bogus", "view key 'bogus'"),
        ("scenario:../x", "view key 'scenario:../x'"),
    ],
)
def test_unavailable_keys_say_why(demo_view, key, message):
    with pytest.raises(ViewUnavailable) as err:
        resolve(key, demo_view)
    assert message in str(err.value)


def test_screen_resolves_both_keys(demo_view, scenario):
    screen = screen_for(selection_from_url(f"/floor?view=scenario:{DEMO_SCENARIO}&compare=live&diff=1"), demo_view)
    assert screen.view is scenario and screen.compare is demo_view and screen.diff
    assert screen_for(ViewSelection(diff=True), demo_view).diff is False  # no difference without a comparison


def test_selection_from_url_and_back():
    selected = selection_from_url("http://127.0.0.1/power?element=X&view=scenario:a&compare=live&diff=true")
    assert selected == ViewSelection("scenario:a", "live", True)
    assert selected.params() == {"view": "scenario:a", "compare": "live", "diff": "1"}
    assert selection_from_url("/power?element=X") == ViewSelection()
    assert ViewSelection().params() == {}


def test_live_hub_publishes_snapshot_and_detail_together(tmp_path):
    from ingest.live.runtime import build_hub

    hub = build_hub(
        "demo", f"sqlite:///{tmp_path / 'hub.db'}", record=False, start=datetime(2026, 7, 15, 14, tzinfo=UTC)
    )
    assert hub.view.latest_tick() == ViewTick(None, None) and hub.view.latest() is None and hub.view.detail() is None
    for second in range(2):
        snap = hub.step(datetime(2026, 7, 15, 14, 0, second, tzinfo=UTC))
        tick = hub.view.latest_tick()
        assert tick.snapshot is snap and tick.detail is hub.ticker.twin.detail
    first = hub.view.latest_tick()
    hub.step(datetime(2026, 7, 15, 14, 0, 5, tzinfo=UTC))
    assert first.detail is not hub.view.latest_tick().detail  # a held tick keeps its own detail
    assert isinstance(hub.view, View) and hub.view.is_live and hub.view.key == "live"
    hub.db.dispose()
