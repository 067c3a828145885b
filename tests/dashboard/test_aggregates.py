"""Site roll-ups shown by the pages."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dashboard.analysis.aggregates import FLOOR_METRICS, TTT_CAP_S, gpu_counts, hottest_racks, n1_status, rack_metrics
from twin.engine.snapshot import GPU_DOWN, GPU_THROTTLED


def test_rack_metrics_one_value_per_rack_for_every_floor_metric(demo_state, demo_snapshot):
    metrics = rack_metrics(demo_state, demo_snapshot)
    assert set(metrics) == {m.key for m in FLOOR_METRICS}
    assert all(v.shape == (demo_state.n_racks,) for v in metrics.values())
    cdu = demo_state.rack_cdu[0]
    expected_dt = demo_snapshot.coolant_return_temp_c[cdu] - demo_snapshot.coolant_supply_temp_c[cdu]
    assert metrics["coolant_delta_t_k"][0] == expected_dt


def test_time_to_throttle_never_is_capped(demo_state, demo_snapshot):
    snap = replace(demo_snapshot, rack_time_to_throttle_s=np.full(demo_state.n_racks, np.inf))
    assert (rack_metrics(demo_state, snap)["time_to_throttle_s"] == TTT_CAP_S).all()


def test_gpu_counts_add_up(demo_snapshot):
    counts = gpu_counts(demo_snapshot)
    assert sum(counts.values()) == demo_snapshot.gpu_state.size
    assert counts["throttled"] == int((demo_snapshot.gpu_state == GPU_THROTTLED).sum())
    assert counts["down"] == int((demo_snapshot.gpu_state == GPU_DOWN).sum())


def test_n1_reports_elements_over_the_limit(demo_state, demo_snapshot):
    n1 = np.full(demo_state.n_power, 0.5)
    n1[4] = 1.3
    status = n1_status(demo_state, replace(demo_snapshot, power_n1_load_frac=n1))
    assert not status["ok"] and status["elements_over"] == [demo_state.power_name[4]]
    assert status["worst_frac"] == 1.3


def test_hottest_racks_sorted_and_skip_unknown(demo_state, demo_snapshot):
    temps = np.linspace(40, 80, demo_state.n_racks)
    temps[-1] = np.nan
    rows = hottest_racks(demo_state, replace(demo_snapshot, rack_max_gpu_temp_c=temps), count=3)
    assert [r["rack"] for r in rows] == [demo_state.n_racks - 2, demo_state.n_racks - 3, demo_state.n_racks - 4]


def test_hottest_racks_break_ties_by_name_and_skip_unknown(demo_state, demo_snapshot):
    from dataclasses import replace

    import numpy as np

    from dashboard.analysis.aggregates import hottest_racks

    temps = np.full(demo_state.n_racks, 60.0)
    temps[5] = 70.0
    temps[2] = np.nan
    rows = hottest_racks(demo_state, replace(demo_snapshot, rack_max_gpu_temp_c=temps), count=4)
    expected = [demo_state.rack_name[5]] + sorted(n for i, n in enumerate(demo_state.rack_name) if i not in (2, 5))[:3]
    assert [r["name"] for r in rows] == expected
