"""Tests of twin/physics/power.py: GPU demand, PSU efficiency curve (80 PLUS Titanium), node power."""

from __future__ import annotations

import numpy as np
import pytest

from twin.physics import power as pw


def test_psu_efficiency_points_of_facts_c2():
    load = np.array([0.10, 0.20, 0.50, 1.00])
    assert pw.psu_efficiency_frac(load) == pytest.approx([0.90, 0.94, 0.96, 0.91])
    assert float(pw.psu_efficiency_frac(0.35)) == pytest.approx(0.95)  # halfway between 20 % and 50 %
    assert pw.psu_efficiency_frac(np.array([0.02, 1.2])) == pytest.approx([0.90, 0.91])  # held at the ends


def test_gpu_demand_from_utilisation():
    assert pw.gpu_demand_power_w(np.array([0.0, 0.5, 1.0, 1.5]), 85.0, 700.0) == pytest.approx(
        [85.0, 392.5, 700.0, 700.0]
    )
    with pytest.raises(ValueError, match="util_frac"):
        pw.gpu_demand_power_w(np.array([np.nan]), 85.0, 700.0)


def test_node_power_hand_point():
    dc = pw.node_dc_power_w(np.array([8 * 600.0]), np.array([0.5]), np.array([1900.0]), np.array([900.0]))
    assert dc[0] == pytest.approx(4800.0 + 900.0 + 500.0)
    # 6,200 W over 2 live 6,200 W PSUs: 50 % load → 96 %
    ac, eff = pw.node_input_power_w(dc, np.array([2]), np.array([6200.0]))
    assert eff[0] == pytest.approx(0.96) and ac[0] == pytest.approx(6200.0 / 0.96)
    ac, _ = pw.node_input_power_w(dc, np.array([0]), np.array([6200.0]))
    assert ac[0] == 0.0
    assert pw.node_power_available_w(np.array([3]), np.array([3300.0]))[0] == pytest.approx(9900.0)
