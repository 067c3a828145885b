"""The power page's shortfall-policy card shows the chain trip → gap → cap → step time."""

from __future__ import annotations

import dataclasses

import numpy as np

from twin.engine.tick import TickInputs, TwinEngine
from twin.scenario.projection import _placed_job
from twin.site.load import load_site


def test_policy_card_shows_trip_gap_cap_and_step_time(page_module):
    page = page_module("power")
    demo = load_site("demo")
    state = dataclasses.replace(
        demo, source_capacity_mw=np.array([0.6, 0.25, 0.25, 0.1]), source_energy_mwh=np.array([0.0, 0.0, 0.0, 0.1])
    )
    inputs = TickInputs(jobs=[_placed_job(state, None)], outdoor_dry_bulb_c=20.0)
    engine = TwinEngine(state)
    engine.settle(inputs)
    snap = engine.tick(1.0, inputs)
    assert page.policy_chain(state, snap, engine.detail)[-2:] == ["no action", f"step {snap.jobs[0].step_time_s:.1f} s"]
    tripped = dataclasses.replace(inputs, failed_sources=[1])
    snap = engine.tick(1.0, tripped)
    chain = page.policy_chain(state, snap, engine.detail)
    assert chain[0] == "GEN-01 lost" and chain[1].startswith("battery 0.1 MW + UPS") and chain[2] == "no action"
    for _ in range(int(state.policy_response_s)):
        snap = engine.tick(1.0, tripped)
    chain = page.policy_chain(state, snap, engine.detail)
    assert chain[0] == "GEN-01 lost" and chain[-2] == f"cap {snap.policy_gpu_cap_w:,.0f} W"
    card = page.policy_card(state, snap, engine.detail)
    assert card.children[1].children[0].children == f"{snap.policy_gpu_cap_w:,.0f}"
    assert "warning" in card.children[1].children[0].className
    assert card.children[2].children == f"step {snap.jobs[0].step_time_s:.1f} s"
    strip = page.policy_strip(state, snap, engine.detail)
    assert len(strip) == 1 and strip[0].children[1] == " → ".join(chain)
    assert page.policy_strip(load_site("demo"), dataclasses.replace(snap, policy_gpu_cap_w=float("inf")), None) == []
