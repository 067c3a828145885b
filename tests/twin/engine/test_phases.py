"""Tests of twin/engine/phases.py: phase results carry units in their names and are what the tick builds on."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.twin.tiny_site import tiny_site
from twin.engine import phases
from twin.engine.tick import TickInputs, TwinEngine

UNIT_SUFFIXES = (
    "_c",
    "_k",
    "_w",
    "_kw",
    "_mw",
    "_frac",
    "_lpm",
    "_s",
    "_c_per_w",
    "_j_per_kg_k",
    "_kg_per_m3",
    "_w_per_k",
    "_count",
    "_ratio",
)
# Fields without a unit: masks named for what they mark, counts, codes, and nested results.
UNITLESS = {
    "source_live",
    "power_live",
    "rack_dark",
    "rack_idle_flag",
    "gpu_off",
    "node_off",
    "gpu_node_off",
    "gpu_power_brake",
    "gpu_down",
    "any_gpu_down",
    "link_up_flag",
    "node_psus_live",
    "pumps_running_count",
    "gpu_clock_event_mask",
    "gpu_state",
    "power_n1_worst_by",
    "balance",
    "ts",
    "weather",
    "power_state",
    "demand",
    "cooling",
    "gpu_thermal",
    "it_power",
    "heat",
    "power_tree",
    "site",
    "fabric",
    "jobs",
    "swing",
    "projections",
    "statuses",
    "power_shapes",
    "rack_shed",
    "supply",
    "dispatch",
    "policy_in_force",
    "policy",
    "swing_share",
    "generation",
}
RESULTS = [
    cls
    for cls in vars(phases).values()
    if dataclasses.is_dataclass(cls) and cls.__module__ == phases.__name__ and cls.__name__.endswith("Result")
]


@pytest.mark.parametrize("cls", RESULTS, ids=lambda c: c.__name__)
def test_every_result_field_names_its_unit(cls):
    for field in dataclasses.fields(cls):
        assert field.name in UNITLESS or field.name.endswith(UNIT_SUFFIXES), f"{cls.__name__}.{field.name}"


def test_tick_results_hold_one_result_per_phase_in_order():
    names = [f.name for f in dataclasses.fields(phases.TickResults)]
    assert names == [
        "ts",
        "weather",
        "power_state",
        "demand",
        "cooling",
        "gpu_thermal",
        "it_power",
        "heat",
        "power_tree",
        "site",
        "fabric",
        "jobs",
        "swing",
        "projections",
        "swing_share",
        "generation",
    ]


def test_phases_compose_into_the_snapshot():
    engine = TwinEngine(tiny_site())
    captured = {}
    build = engine._snapshot

    def spy(results):
        captured["results"] = results
        return build(results)

    engine._snapshot = spy
    snap = engine.tick(1.0, TickInputs(failed_power=[4]))
    res = captured["results"]
    assert isinstance(res.gpu_thermal, phases.GpuThermalResult) and isinstance(res.demand, phases.DemandResult)
    assert snap.gpu_power_w is res.gpu_thermal.gpu_power_w
    assert snap.coolant_return_temp_c is res.heat.coolant_return_temp_c
    assert snap.feed_power_kw is res.power_tree.feed_power_kw
    assert np.array_equal(engine.detail.dark_racks, np.flatnonzero(res.power_state.rack_dark))
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.heat.cdu_pump_kw = 0.0
