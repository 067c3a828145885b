"""The engine's snapshots on demo and colossus under faults match the recorded figures.

The golden figures were produced by the engine before its phases passed typed results
(see ``engine_regression.py``); a restructuring of the tick must reproduce them within
float rounding.
"""

from __future__ import annotations

import json

import pytest

from tests.twin.engine.engine_regression import GOLDEN_FILE, SITES, summarise


@pytest.mark.parametrize("site", SITES)
@pytest.mark.slow
def test_engine_reproduces_the_recorded_figures(site):
    golden = json.loads(GOLDEN_FILE.read_text())[site]
    now = summarise(site)
    assert sorted(now) == sorted(golden)
    for tick, figures in golden.items():
        assert sorted(now[tick]) == sorted(figures), tick
        for key, expected in figures.items():
            assert now[tick][key] == pytest.approx(expected, rel=1e-9, abs=1e-9), f"{tick} {key}"
