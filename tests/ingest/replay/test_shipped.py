"""The incidents shipped in data/incidents: present, valid, small, and replayable on colossus."""

import numpy as np
import pytest

from ingest.replay.bundle import read_bundle
from ingest.replay.library import SHIPPED_DIR, validate
from ingest.replay.replay import replay

SHIPPED = {
    "colossus-cdu-pump-failure": ("critical", "0 of 2 pumps running"),
    "colossus-generator-trip": ("critical", "exceeds generation"),
    "colossus-spine-failure": ("warning", "uplinks down"),
    "colossus-hot-afternoon": (None, None),
    "colossus-xid79-restart": ("critical", "XID 79 on h1-r01-k05-n3/gpu2"),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_incident_is_valid_and_small(name):
    path = SHIPPED_DIR / f"{name}.ctincident"
    assert path.stat().st_size < 3e6
    bundle = read_bundle(path)
    state = validate(bundle)
    assert state.name == "colossus" and bundle.name == name
    assert len(bundle.frame("site")) == 121 and bundle.metadata["frame_every_s"] == 5.0
    severity, text = SHIPPED[name]
    if text:
        events = bundle.frame("events")
        hit = events[events["message"].str.contains(text, regex=False)]
        assert not hit.empty and (hit["severity"] == severity).any()


def test_pump_failure_replays_the_rise_and_throttle():
    bundle = read_bundle(SHIPPED_DIR / "colossus-cdu-pump-failure.ctincident")
    state = validate(bundle)
    result = replay(bundle, state)
    assert result.outcome["max_gpu_temp_c"] > 80 and result.outcome["max_gpus_throttled"] >= 64
    recorded, projected = result.series["gpu_temp_c"]
    rack = np.isin(np.unique(bundle.frame("gpu")["gpu_id"]), np.flatnonzero(state.gpu_rack == 0))
    peak_rec, peak_proj = np.nanmax(recorded[:, rack]), np.nanmax(projected[:, rack])
    assert abs(peak_rec - peak_proj) < 5
    assert result.signals["gpu_temp_c"]["cv_rmse"] < 10 and abs(result.signals["gpu_power_w"]["nmbe"]) < 5
