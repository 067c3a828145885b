"""The flight recorder on its own, fed by a demo-site hub built here: ring, pruning, saves, and a real kill -9."""

import os
import signal
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from ingest.live.runtime import build_hub
from ingest.replay.bundle import CLEARED, Bundle, BundleError, read_bundle
from ingest.replay.library import validate
from ingest.replay.recorder import FlightRecorder
from ingest.replay.session import T0, recorder_tick
from twin.site.load import site_path

REPO_DIR = Path(__file__).resolve().parents[3]


def make(tmp_path, faults=(), **kw):
    hub = build_hub("demo", f"sqlite:///{tmp_path / 'live.db'}", faults=faults, seed=1, start=T0, record=False)
    rec = FlightRecorder(
        hub.state, tmp_path / "ring", tmp_path / "incidents", site_toml=site_path("demo").read_text(), **kw
    )
    return hub, rec


def run(hub, rec, seconds, step_s=1.0):
    saved = []
    for i in range(int(seconds / step_s)):
        saved += recorder_tick(hub, rec, T0 + timedelta(seconds=i * step_s))
    return saved


@pytest.mark.slow
def test_ring_keeps_the_last_window_at_the_cadence(tmp_path):
    hub, rec = make(tmp_path, window_s=60, every_s=5, auto_save=False)
    run(hub, rec, 200)
    times = rec.frame_times()
    assert times[-1] == T0 + timedelta(seconds=195)
    assert times[0] == T0 + timedelta(seconds=140)  # 60 s before the last tick (199 s), frames every 5 s
    assert len(list((tmp_path / "ring").glob("*.npz"))) == 12


@pytest.mark.slow
def test_save_on_demand_is_exempt_from_pruning(tmp_path):
    hub, rec = make(tmp_path, window_s=30, every_s=5, auto_save=False)
    run(hub, rec, 40)
    path = rec.save(T0 + timedelta(seconds=10), T0 + timedelta(seconds=35), name="manual", tags=["drill"])
    run(hub, rec, 120)  # the ring has moved on and dropped those frames
    assert rec.frame_times()[0] > T0 + timedelta(seconds=35)
    b = read_bundle(path)
    assert len(b.frame("site")) == 6 and b.metadata["tags"] == ["drill"]


@pytest.mark.slow
def test_critical_alert_saves_with_pre_and_post_roll(tmp_path):
    hub, rec = make(
        tmp_path, faults=("xid:h1-r01-k02-n0/3@50",), window_s=120, every_s=5, pre_roll_s=30, post_roll_s=20
    )
    saved = run(hub, rec, 100)
    assert len(saved) == 1
    b = read_bundle(saved[0])
    site = b.frame("site")
    assert site["ts"].iloc[0] == T0 + timedelta(seconds=20) and site["ts"].iloc[-1] == T0 + timedelta(seconds=70)
    # titled after the cause: the XID (the GPU it takes down is the effect, grouped under it)
    assert "automatic" in b.metadata["tags"] and "XID 79 on h1-r01-k02-n0/gpu3" in b.metadata["title"]
    assert "H1-R01-K02" in b.metadata["detail_racks"]


RECORDING_SCRIPT = textwrap.dedent("""
    import sys
    from datetime import timedelta
    from pathlib import Path
    from ingest.live.runtime import build_hub
    from ingest.replay.recorder import FlightRecorder
    from ingest.replay.session import T0, recorder_tick
    from twin.site.load import site_path

    out = Path(sys.argv[1])
    hub = build_hub("demo", f"sqlite:///{out / 'live.db'}", seed=1, start=T0, record=False)
    rec = FlightRecorder(hub.state, out / "ring", out / "incidents", site_toml=site_path("demo").read_text(),
                         window_s=3600, every_s=1, auto_save=False)
    i = 0
    while True:
        ts = T0 + timedelta(seconds=i)
        recorder_tick(hub, rec, ts)
        if i == 5:
            rec.save(T0, ts, name="before-kill")
        print(i, flush=True)
        i += 1
""")


@pytest.mark.slow
def test_kill_9_loses_at_most_the_last_frame_and_no_incident(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_DIR)}
    proc = subprocess.Popen(
        [sys.executable, "-c", RECORDING_SCRIPT, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO_DIR,
    )
    try:
        last = -1
        while last < 25:
            line = proc.stdout.readline()
            assert line, f"recording process ended early (rc {proc.poll()})"
            last = int(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    # a new recorder over the same directories finds every completed frame intact
    hub, rec = make(tmp_path, window_s=3600, every_s=1, auto_save=False)
    times = rec.frame_times()
    assert times[0] == T0 and len(times) >= last + 1  # tick `last` was written before it was printed
    frames = rec.frames(times[0], times[-1])
    assert [f.ts for f in frames] == times
    assert not list((tmp_path / "ring").glob(".*.tmp-*"))
    b = read_bundle(tmp_path / "incidents" / "before-kill.ctincident")
    assert len(b.frame("site")) == 6
    # and it records on from where the killed one stopped
    recorder_tick(hub, rec, times[-1] + timedelta(seconds=1))
    assert len(rec.frame_times()) == len(times) + 1


def _events(rec):
    return rec.events(T0, T0 + timedelta(days=1)).to_pandas()


@pytest.mark.slow
def test_an_alert_that_comes_and_goes_has_an_opening_and_a_clearing(tmp_path):
    """Both pumps of a CDU stop at 20 s for 30 s: the pump alert opens, and clears once the pumps run again."""
    hub, rec = make(tmp_path, faults=("pump:H1-R01-K01-CDU@20+30=2",), window_s=300, every_s=5, auto_save=False)
    run(hub, rec, 150)
    ev = _events(rec)
    pump = ev[(ev["entity_kind"] == "cdu") & (ev["entity_name"] == "H1-R01-K01-CDU")]
    opened = pump[pump["severity"] != CLEARED]
    cleared = pump[pump["severity"] == CLEARED]
    assert len(opened) >= 1 and len(cleared) >= 1
    first_open, first_clear = opened.iloc[0], cleared.iloc[0]
    assert first_open["ts"] >= T0 + timedelta(seconds=20)
    assert first_clear["ts"] > first_open["ts"] and first_clear["ts"] >= T0 + timedelta(seconds=50)
    for col in ("source", "entity_kind", "entity_id", "entity_name", "metric"):
        assert first_clear[col] == first_open[col]
    assert first_clear["message"] == f"cleared: {first_open['message']}"
    # every clearing follows an opening of the same alert, and nothing the fault raised is left open at the end
    for (kind, eid, metric), rows in ev.groupby(["entity_kind", "entity_id", "metric"]):
        states = list(rows.sort_values("ts", kind="stable")["severity"] == CLEARED)
        assert states[0] is False and all(a != b for a, b in zip(states, states[1:], strict=False)), (kind, eid, metric)
    assert not any(c.entity_name == "H1-R01-K01-CDU" for c in hub.live_alerts.conditions)
    path = rec.save(T0, T0 + timedelta(seconds=145), name="pump-blip")
    bundle = read_bundle(path)
    validate(bundle)
    assert (bundle.frame("events")["severity"] == CLEARED).sum() == (ev["severity"] == CLEARED).sum()


@pytest.mark.slow
def test_a_restarted_recorder_continues_the_open_alerts_of_its_log(tmp_path):
    """Restarted while a pump alert is open: no second opening while it holds, its clearing once it ends."""
    hub, rec = make(tmp_path, faults=("pump:H1-R01-K01-CDU@5+40=2",), window_s=300, every_s=5, auto_save=False)
    for i in range(30):
        recorder_tick(hub, rec, T0 + timedelta(seconds=i))
    open_before = {c.key for c in hub.live_alerts.conditions}
    assert any(k.startswith("pump:") for k in open_before)
    rec = FlightRecorder(hub.state, tmp_path / "ring", tmp_path / "incidents", site_toml="", every_s=5, window_s=300)
    for i in range(30, 120):
        recorder_tick(hub, rec, T0 + timedelta(seconds=i))
    ev = _events(rec)
    pump = ev[
        (ev["entity_kind"] == "cdu") & (ev["entity_name"] == "H1-R01-K01-CDU") & (ev["metric"] == "pumps_running_count")
    ]
    assert list(pump["severity"] == CLEARED) == [False, True]
    assert pump["ts"].iloc[1] >= T0 + timedelta(seconds=45)


@pytest.mark.slow
def test_validation_accepts_clearings_and_refuses_an_unknown_severity(tmp_path):
    hub, rec = make(tmp_path, faults=("pump:H1-R01-K01-CDU@5+10=2",), window_s=300, every_s=5, auto_save=False)
    run(hub, rec, 60)
    bundle = read_bundle(rec.save(T0, T0 + timedelta(seconds=55), name="blip"))
    assert (bundle.frame("events")["severity"] == CLEARED).any()
    validate(bundle)
    events = bundle.tables["events"]
    bogus = events.set_column(1, "severity", pa.array(["closed"] * events.num_rows, type=pa.string()))
    with pytest.raises(BundleError, match="severity 'closed'"):
        validate(Bundle(bundle.metadata, bundle.site_toml, {**bundle.tables, "events": bogus}))
