"""The incidents shipped in data/incidents: present, valid, small, and replayable on colossus."""

import json
import subprocess
import sys
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from ingest.replay.bundle import read_bundle
from ingest.replay.library import SHIPPED_DIR, validate
from ingest.replay.replay import replay
from twin.site.load import load_site

SHIPPED = {
    "colossus-cdu-pump-failure": ("critical", "0 of 2 pumps running"),
    "colossus-generator-trip": ("critical", "exceeds generation"),
    "colossus-spine-failure": ("warning", "uplinks down"),
    "colossus-hot-afternoon": (None, None),
    "colossus-xid79-restart": ("critical", "XID 79 on h1-r01-k05-n3/gpu2"),
}
# the site each incident ran on: the generator trip runs on colossus with a bridge battery added
SITES = {name: "colossus" for name in SHIPPED} | {"colossus-generator-trip": "colossus-bess"}
GEN_TRIP = SHIPPED_DIR / "colossus-generator-trip.ctincident"


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_incident_is_valid_and_small(name):
    path = SHIPPED_DIR / f"{name}.ctincident"
    assert path.stat().st_size < 3e6
    bundle = read_bundle(path)
    state = validate(bundle)
    assert state.name == SITES[name] and bundle.name == name
    assert len(bundle.frame("site")) == 121 and bundle.metadata["frame_every_s"] == 5.0
    severity, text = SHIPPED[name]
    if text:
        events = bundle.frame("events")
        hit = events[events["message"].str.contains(text, regex=False)]
        assert not hit.empty and (hit["severity"] == severity).any()


@pytest.mark.slow
def test_pump_failure_replays_the_rise_and_throttle():
    bundle = read_bundle(SHIPPED_DIR / "colossus-cdu-pump-failure.ctincident")
    state = validate(bundle)
    result = replay(bundle, state)
    assert result.outcome.max_gpu_temp_c > 80 and result.outcome.max_gpus_throttled >= 64
    recorded, projected = result.series["gpu_temp_c"]
    rack = np.isin(np.unique(bundle.frame("gpu")["gpu_id"]), np.flatnonzero(state.gpu_rack == 0))
    peak_rec, peak_proj = np.nanmax(recorded[:, rack]), np.nanmax(projected[:, rack])
    assert abs(peak_rec - peak_proj) < 5
    assert result.signals["gpu_temp_c"]["cv_rmse"] < 10 and abs(result.signals["gpu_power_w"]["nmbe"]) < 5


@pytest.fixture(scope="module")
def gen_trip():
    bundle = read_bundle(GEN_TRIP)
    return bundle, validate(bundle)


def _trip_frames(bundle, state):
    """Per frame: instant, battery power [MW], mean battery charge, detail GPUs' mean power, clock and
    utilisation, the job's step time; and the first frame that reports the bank's generators failed."""
    site = bundle.frame("site")
    src = bundle.frame("source")
    battery = np.flatnonzero(state.source_kind == 2)
    bat = (
        src[src["source_id"].isin(battery)]
        .groupby("ts")
        .agg(battery_power_mw=("source_power_mw", "sum"), battery_soc_frac=("battery_soc_frac", "mean"))
    )
    gpu = (
        bundle.frame("gpu")
        .groupby("ts")
        .agg(
            gpu_power_w=("gpu_power_w", "mean"),
            sm_clock_mhz=("sm_clock_mhz", "mean"),
            gpu_util_frac=("gpu_util_frac", "mean"),
        )
    )
    frames = site.set_index("ts")[["job_step_time_s", "failed_sources"]].join(bat).join(gpu).reset_index()
    trip = int(np.flatnonzero(frames["failed_sources"].map(len) > 0)[0])
    return frames, trip


def test_generator_trip_runs_on_colossus_with_a_bridge_battery(gen_trip):
    bundle, state = gen_trip
    colossus = load_site("colossus")
    battery = state.source_kind == 2
    assert battery.sum() == 8 and not (colossus.source_kind == 2).any()
    assert state.source_name[: colossus.n_sources] == colossus.source_name  # colossus' sources, then the battery
    assert state.n_gpus == colossus.n_gpus and state.rack_name == colossus.rack_name
    failed = {state.source_name[i] for i in bundle.frame("site")["failed_sources"].iloc[-1]}
    assert failed == {f"GEN-A-0{k}" for k in range(1, 8)}


def test_generator_trip_battery_carries_the_gap_and_the_cap_slows_the_job(gen_trip):
    bundle, state = gen_trip
    f, trip = _trip_frames(bundle, state)
    t_trip = f["ts"][trip]
    assert t_trip - f["ts"][0] == timedelta(seconds=60)
    busy = f["gpu_util_frac"] > 0.9  # frames that sample the job computing (not a communication phase)
    before, after = f[busy & (f.index < trip)], f[busy & (f.index > trip)]
    # the battery discharges from the trip on, its charge falling (it charged from spare reach before)
    battery = state.source_kind == 2
    rating_mw = float(state.source_capacity_mw[battery].sum())
    assert f["battery_power_mw"][trip] > 0.9 * rating_mw
    assert (f["battery_soc_frac"][:trip] > 0.999).all()
    # it carries the gap between the load and the sources left, up to its rating (the UPSs take the
    # rest), in every frame after the trip: near its rating while the job computes under the cap
    live = np.ones(state.n_sources, dtype=bool)
    live[list(f["failed_sources"][trip])] = False
    facility = bundle.frame("site")["facility_power_mw"].to_numpy()
    gap = facility - float(state.source_capacity_mw[live & ~battery].sum())
    carried = f["battery_power_mw"].to_numpy()
    assert (carried[trip:] >= np.minimum(gap[trip:], 0.99 * rating_mw) - 0.5).all()
    # all but a few frames: when the chillers come back (5 min after the trip) they pull the plant
    # water down for about a minute, the cap tightens for it, and the policy holds that cap for its
    # window (policy.ENVELOPE_S) after the pull-down ends, so the battery carries less for those frames
    assert (after["battery_power_mw"] > 5.0).mean() >= 0.9
    soc = f["battery_soc_frac"][trip:].to_numpy()
    assert soc[-1] < soc[0] - 0.02 and soc[-1] == pytest.approx(soc.min())
    # the cap: the first busy frame after the policy's response time is capped, and it comes at most a
    # (communication-phase) frame later; GPU power and clocks fall, the step time rises
    frame_s = bundle.metadata["frame_every_s"]
    first = after[after["ts"] >= t_trip + pd.Timedelta(seconds=state.policy_response_s)].iloc[0]
    assert first["ts"] <= t_trip + pd.Timedelta(seconds=state.policy_response_s + 2 * frame_s)
    p0, clk0 = before["gpu_power_w"].median(), before["sm_clock_mhz"].median()
    step0 = before["job_step_time_s"].median()
    assert first["gpu_power_w"] < 0.85 * p0 and first["sm_clock_mhz"] < 0.9 * clk0
    assert after["gpu_power_w"].median() < 0.85 * p0 and after["sm_clock_mhz"].median() < 0.9 * clk0
    # the cap brings the site's load within what the sources left (the battery at its rating) supply, and
    # not far below: the load of the job computing before the trip exceeded it
    capacity_mw = float(state.source_capacity_mw[live].sum())
    capped = facility[after.index[after["ts"] >= first["ts"]]]
    assert facility[before.index].min() > capacity_mw
    assert 0.9 * capacity_mw < np.median(capped) <= capacity_mw and facility[first.name] <= capacity_mw
    assert (f["job_step_time_s"][:trip] == step0).all() and after["job_step_time_s"].median() > 1.1 * step0
    events = bundle.frame("events")
    tripped = events[events["message"].str.contains("tripped", regex=False)]
    assert sorted(tripped["entity_name"]) == [f"GEN-A-0{k}" for k in range(1, 8)] and (tripped["ts"] == t_trip).all()
    # one episode of the shortfall: the chillers' return does not reopen it (they soft-load, and the
    # policy decides on the swing's envelope, so a communication phase does not lift the cap)
    short = events[events["message"].str.startswith("facility load exceeds generation")]
    assert len(short) == 1 and short["ts"].iloc[0] < t_trip + pd.Timedelta(seconds=10)


@pytest.mark.slow
def test_generator_trip_replays_from_the_command_line(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "twin.cli", "replay", "colossus-generator-trip", "--speed", "max", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["site"] == "colossus-bess" and report["n_workers"] == 1  # a failed source: one process
    assert report["n_ticks"] == 600 and report["outcome"]["max_gpus_throttled"] >= 24_576  # the job capped
    assert report["signals"]["gpu_temp_c"]["cv_rmse"] < 10
    # the cap holds through the communication phases the frames sample (the policy's envelope):
    # GPU power within 5 % (it was 14.8 % when a trough lifted the cap for 5 s)
    assert report["signals"]["gpu_power_w"]["cv_rmse"] < 5 and report["signals"]["it_power_mw"]["cv_rmse"] < 5
