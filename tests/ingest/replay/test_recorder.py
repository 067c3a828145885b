"""The flight recorder on its own, fed by a demo-site hub built here: ring, pruning, saves, and a real kill -9."""

import os
import signal
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

from ingest.live.runtime import build_hub
from ingest.replay.bundle import read_bundle
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


def test_ring_keeps_the_last_window_at_the_cadence(tmp_path):
    hub, rec = make(tmp_path, window_s=60, every_s=5, auto_save=False)
    run(hub, rec, 200)
    times = rec.frame_times()
    assert times[-1] == T0 + timedelta(seconds=195)
    assert times[0] == T0 + timedelta(seconds=140)  # 60 s before the last tick (199 s), frames every 5 s
    assert len(list((tmp_path / "ring").glob("*.npz"))) == 12


def test_save_on_demand_is_exempt_from_pruning(tmp_path):
    hub, rec = make(tmp_path, window_s=30, every_s=5, auto_save=False)
    run(hub, rec, 40)
    path = rec.save(T0 + timedelta(seconds=10), T0 + timedelta(seconds=35), name="manual", tags=["drill"])
    run(hub, rec, 120)  # the ring has moved on and dropped those frames
    assert rec.frame_times()[0] > T0 + timedelta(seconds=35)
    b = read_bundle(path)
    assert len(b.frame("site")) == 6 and b.metadata["tags"] == ["drill"]


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
