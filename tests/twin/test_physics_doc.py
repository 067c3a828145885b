"""docs/physics.md states the code's constants: every row of its constants table equals the module's value."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.conftest import REPO_DIR

ROW = re.compile(r"^\| `([A-Z0-9_]+)` \| ([-0-9.e]+) \| `([a-z_.]+)` \|", re.M)


def _rows():
    text = (REPO_DIR / "docs" / "physics.md").read_text()
    section = text[text.index("## 7. Constants in code") :]
    return ROW.findall(section)


def test_the_table_lists_the_cooling_and_thermal_constants():
    names = {name for name, _, _ in _rows()}
    assert {
        "CONVECTION_FLOW_EXPONENT",
        "LEAKAGE_REF_C",
        "CONDENSER_RANGE_K",
        "ECONOMISER_APPROACH_K",
        "PLANT_STORAGE_S",
        "CHILLER_RESTART_S",
        "TOWER_FAN_KW_PER_KW",
    } <= names


@pytest.mark.parametrize("name,value,module", _rows())
def test_documented_constant_equals_the_code(name, value, module):
    assert getattr(importlib.import_module(module), name) == pytest.approx(float(value), rel=1e-12)
