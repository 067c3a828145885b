"""Overview tiles: windowed means with a band, colours from impact, shares of the live fleet."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd

from dashboard.analysis.tiles import overview_tiles, power_breakdown, sparkline
from twin.engine.snapshot import GPU_OFF


def test_without_a_trend_the_tiles_show_the_snapshot(demo_state, demo_snapshot):
    tiles = overview_tiles(demo_state, demo_snapshot, None, pd.DataFrame(), [])
    assert tiles["it_power"].value == f"{demo_snapshot.it_power_mw:,.1f}"
    assert tiles["pue"].value == f"{demo_snapshot.pue_ratio:.2f}"
    assert tiles["alerts"].value == "0" and tiles["alerts"].status == "ok"
    assert all(t.value == "–" for t in overview_tiles(demo_state, None, None, pd.DataFrame(), []).values())


def test_the_it_load_tile_averages_the_swing_and_shows_its_band(demo_state, demo_snapshot):
    ts = pd.date_range(demo_snapshot.ts - pd.Timedelta(seconds=59), periods=60, freq="1s", name="ts")
    swing = np.where(np.arange(60) % 2 == 0, 0.9, 0.5)
    trend = pd.DataFrame(
        {
            "it_power_mw": swing,
            "facility_power_mw": swing + 0.3,
            "generation_capacity_mw": 1.6,
            "pue_ratio": 1.2,
            "tokens_per_s": 1e5,
        },
        index=ts,
    )
    tile = overview_tiles(demo_state, demo_snapshot, None, trend, [])["it_power"]
    assert tile.value == "0.7" and tile.note == "0.5–0.9 over 30 s" and len(tile.spark) == 16


def test_a_stalled_job_and_a_dead_feed_are_critical(demo_state, demo_snapshot):
    job = replace(demo_snapshot.jobs[0], tokens_per_s=0.0)
    snap = replace(demo_snapshot, jobs=[job])
    live = np.ones(demo_state.n_power, dtype=bool)
    live[5] = False
    detail = SimpleNamespace(power_live=live)
    tiles = overview_tiles(demo_state, snap, detail, pd.DataFrame(), [])
    assert tiles["tokens"].status == "critical" and "1 of 1 job(s) stalled" in tiles["tokens"].note
    assert tiles["n1"].value == "LOST" and tiles["n1"].status == "critical"


def test_gpu_shares_are_of_the_live_fleet(demo_state, demo_snapshot):
    state = demo_snapshot.gpu_state.copy()
    state[: demo_state.n_gpus // 2] = GPU_OFF
    tiles = overview_tiles(demo_state, replace(demo_snapshot, gpu_state=state), None, pd.DataFrame(), [])
    live = demo_state.n_gpus - demo_state.n_gpus // 2
    assert f"of {live:,} live" in tiles["gpus_down"].note
    assert tiles["gpus_ok"].note.endswith(f" · {demo_state.n_gpus // 2:,} off")


def test_breakdown_adds_up_to_the_facility_load(demo_snapshot):
    balance = SimpleNamespace(
        it_mw=23.7, network_mw=6.8, distribution_loss_mw=1.6, cooling_mw=4.5, overhead_mw=0.4, facility_mw=37.0
    )
    text = power_breakdown(demo_snapshot, SimpleNamespace(balance=balance))
    assert text.startswith(
        "Now: facility 37.0 MW = IT 23.7 + network 6.8 + distribution losses 1.6 + cooling 4.5 + site 0.4"
    )
    assert "parts sum" not in text and "(tiles marked '30 s mean' average the swing)" in text


def test_every_tile_says_whether_it_is_a_window_mean_or_the_latest_tick(demo_state, demo_snapshot):
    """The IT tile read 22.4 MW beside a breakdown's "IT 24.0": one is a 30 s mean, the other this tick."""
    tiles = overview_tiles(demo_state, demo_snapshot, None, None, [])
    assert {n: t.basis for n, t in tiles.items() if t.basis != "now"} == {
        n: "30 s mean" for n in ("it_power", "facility_power", "supply_headroom", "pue", "tokens")
    }
    assert tiles["gpus_down"].basis == tiles["alerts"].basis == tiles["n1"].basis == "now"


def test_sparkline_scales_to_its_own_range():
    assert sparkline((1.0, 2.0, 3.0)) == "▁▅█"
    assert sparkline((5.0,)) == "" and sparkline((2.0, 2.0)) == "▄▄"
