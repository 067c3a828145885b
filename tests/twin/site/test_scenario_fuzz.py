"""Property: any scenario file (edits included) parses against a site into finite inputs or raises one ScenarioError line.

Inputs are mutations of a scenario that uses every key, arbitrary text and arbitrary bytes
(see ``tests/twin/fuzzing.py``; ``CLUSTERTWIN_FUZZ_EXAMPLES`` sets how many).
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from tests.twin.fuzzing import FUZZ_SETTINGS, bounded, mutated, raw_texts, toml_text
from twin.scenario.conditions import MAX_SETTLE_S, ScenarioError
from twin.scenario.load import load_scenario, parse_scenario
from twin.site.load import load_site

DEMO = load_site("demo")
SCRATCH = Path(tempfile.mkdtemp(prefix="scenario-fuzz-"))
FULL = {
    "scenario": {
        "name": "everything",
        "description": "every key",
        "settle_s": 600,
        "time": datetime(2024, 7, 22, 20, tzinfo=UTC),
    },
    "conditions": {
        "gpu_util_frac": 0.95,
        "gpu_power_limit_w": 600,
        "outdoor_dry_bulb_c": 36.0,
        "outdoor_wet_bulb_c": 27.0,
        "failed_power": ["H1-TX1-A"],
        "failed_sources": ["GEN-01"],
        "failed_switches": ["leaf-p00-a000-r3"],
        "pumps_failed": ["H1-R01-K01-CDU"],
        "cdus_failed": ["H1-R01-K02-CDU"],
        "loop_supply_temp_c": {"FW-H1": 32.0},
        "job": "demo-70b-1k",
        "idle_nodes_off": True,
    },
    "edits": [
        {"op": "move_rack", "racks": ["H1-R01-K01"], "x_m": 5.8, "y_m": 1.0},
        {"op": "set_rack_type", "rows": ["H1-R02"], "type": "hgx-a100-inrow"},
        {"op": "fail", "elements": ["GEN-*", "H1-R01-K02-CDU"], "pumps_count": 1},
        {"op": "restore", "elements": ["GEN-02"]},
        {"op": "set_cap", "racks": ["H1-R01-*"], "gpu_power_limit_w": 500},
        {"op": "set_setpoint", "loops": ["FW-H1"], "supply_temp_c": 30.0},
        {"op": "set_weather", "outdoor_dry_bulb_c": 38.0},
    ],
}


def check(text: str) -> None:
    with bounded():
        try:
            sc = parse_scenario(text, DEMO, "fuzz.toml")
        except ScenarioError as exc:
            assert str(exc).startswith("fuzz.toml: ") and "\n" not in str(exc), str(exc)
            return
    assert 0.0 <= sc.settle_s <= MAX_SETTLE_S and sc.time.tzinfo is not None
    inp = sc.inputs
    for name in ("gpu_util_frac", "gpu_power_limit_w", "outdoor_dry_bulb_c", "outdoor_wet_bulb_c"):
        value = getattr(inp, name)
        assert value is None or np.isfinite(np.asarray(value, dtype=float)).all(), name
    supply = np.asarray(inp.loop_supply_temp_c, dtype=float)
    assert (np.isnan(supply) | ((supply >= 2.0) & (supply <= 70.0))).all()
    assert sc.job is None or isinstance(sc.job, str)


def test_the_full_scenario_parses():
    check(toml_text(FULL))


@FUZZ_SETTINGS
@given(mutated(FULL, extra_values=st.sampled_from(DEMO.power_name[:4] + DEMO.cdu_name[:4]).map(lambda n: [n])))
@example({"scenario": {"settle_s": 604_800}})
@example({"conditions": {"loop_supply_temp_c": {"FW-H1": float("nan")}}})
@example({"scenario": [1, 2]})
def test_mutated_scenarios(doc):
    check(toml_text(doc))


@FUZZ_SETTINGS
@given(raw_texts())
@example("x = " + "[" * 100_000 + "]" * 100_000)
def test_arbitrary_text(text):
    check(text)


@FUZZ_SETTINGS
@given(st.binary(max_size=300))
@example(b'[scenario]\nname = "caf\xe9"\n')
def test_arbitrary_bytes_in_a_file(data):
    path = SCRATCH / "fuzz.toml"
    path.write_bytes(data)
    with bounded():
        try:
            load_scenario(path, DEMO)
        except ScenarioError as exc:
            assert "\n" not in str(exc), str(exc)
