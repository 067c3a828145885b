"""Open alerts onto racks: rack, GPU, CDU and feed alerts mark their racks at the highest severity."""

from __future__ import annotations

import numpy as np

from dashboard.analysis.rack_alerts import rack_alert_level


def _alert(kind, entity, severity="warning", cleared=None):
    return {"entity_kind": kind, "entity_id": entity, "severity": severity, "cleared_at": cleared}


def test_alerts_mark_their_racks_at_the_highest_severity(demo_state):
    s = demo_state
    gpu = int(np.flatnonzero(s.gpu_rack == 9)[3])
    feed = int(s.rack_feed_a[12])
    alerts = [
        _alert("rack", 1),
        _alert("rack", 1, "critical"),
        _alert("gpu", gpu, "critical"),
        _alert("cdu", int(s.rack_cdu[4])),
        _alert("power", feed),
        _alert("rack", 2, "info"),
        _alert("rack", 3, "critical", cleared="2026-07-15"),
        _alert("site", 0, "critical"),
        _alert("job", 0, "critical"),
    ]
    level = rack_alert_level(s, alerts)
    assert level[1] == 2 and level[9] == 2 and level[4] >= 1
    assert level[2] == 0 and level[3] == 0  # info is not drawn, cleared alerts are gone
    fed = np.flatnonzero((s.rack_feed_a == feed) | (s.rack_feed_b == feed))
    assert (level[fed] >= 1).all()
    assert set(np.flatnonzero(level).tolist()) == {
        1,
        9,
        *np.flatnonzero(s.rack_cdu == s.rack_cdu[4]).tolist(),
        *fed.tolist(),
    }
