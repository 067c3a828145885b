"""Alerts of the generating units and the grid contract (twin/physics/island.py) on real engine ticks."""

from __future__ import annotations

import pytest

from ingest.live.alert_rules import SiteFacts, evaluate
from twin.engine.tick import TickInputs, TwinEngine
from twin.site.load import load_site


@pytest.fixture(scope="module")
def colossus():
    return load_site("colossus")


def _conditions(state, inputs: TickInputs):
    engine = TwinEngine(state, settle=False)
    engine.settle(inputs)
    snap = engine.tick(1.0, inputs)
    facts = SiteFacts(engine.detail.power_live, engine.detail.source_live, generation=engine.detail.generation)
    return {c.key: c for c in evaluate(state, snap, facts)}, engine.detail.generation


def test_colossus_at_training_start_fails_n1_and_its_swing_breaks_the_grid_contract(colossus):
    """Every GPU busy on 43 MW: 14 units and the 8 MW grid near their limits; the loss of the grid leaves
    load unserved, and the swing at the grid exceeds its contract's ramp and voltage change."""
    conds, gen = _conditions(colossus, TickInputs())
    reserve = conds["gen_reserve:site:0"]
    assert reserve.severity == "warning" and "GRID-MLGW" in reserve.message and reserve.value > 0
    assert reserve.runbook and gen.reserve.n1_deficit_mw == pytest.approx(reserve.value)
    grid = conds["grid_contract:site:0"]
    assert "ramp" in grid.message and "voltage change" in grid.message
    # with the grid live the island's frequency rules stay quiet (the grid holds the frequency)
    assert not any(k.startswith(("island_frequency", "gen_rejection", "gen_surge")) for k in conds)


def test_islanded_the_swing_and_the_dips_are_judged_on_the_units(colossus):
    grid = colossus.source_name.index("GRID-MLGW")
    conds, gen = _conditions(colossus, TickInputs(failed_sources=[grid]))
    assert gen.islanded_flag and gen.island_online_mw == pytest.approx(35.0, rel=0.05)
    # the default 2 s step sits near the island's 0.5 Hz governor mode: far outside the G2 band
    freq = conds["island_frequency:site:0"]
    assert freq.severity == "critical" and freq.value > 2 * gen.freq_band_hz
    assert "grid_contract:site:0" not in conds


def test_a_unit_recovering_from_its_load_step_is_flagged(colossus):
    """The rule reads the tick's count of units held back by their recovering step (twin/physics/sources.py)."""
    from dataclasses import replace

    engine = TwinEngine(colossus)
    snap = engine.tick(1.0)
    gen = replace(engine.detail.generation, units_step_limited_count=3)
    facts = SiteFacts(engine.detail.power_live, engine.detail.source_live, generation=gen)
    step = {c.key: c for c in evaluate(colossus, snap, facts)}["gen_step:site:0"]
    assert step.severity == "warning" and step.message.startswith("3 generating units held back")
    quiet = SiteFacts(engine.detail.power_live, engine.detail.source_live, generation=engine.detail.generation)
    assert "gen_step:site:0" not in {c.key for c in evaluate(colossus, snap, quiet)}
