"""The canonical quantity list and the README's copy of it."""

import re

import pytest

from tests.conftest import REPO_DIR
from twin.quantities import QUANTITIES, markdown_table, quantity

UNIT_SUFFIXES = ("_w", "_kw", "_mw", "_c", "_k", "_lpm", "_kpa", "_mhz", "_frac", "_j", "_s", "_h", "_v", "_a",
                 "_mib", "_rpm", "_total", "_ratio", "_mask", "_last", "_up", "_detected", "_gpu", "_per_s",
                 "_per_joule")


def test_readme_table_is_the_generated_one():
    readme = (REPO_DIR / "README.md").read_text()
    block = re.search(r"<!-- units:begin -->\n(.*?)\n<!-- units:end -->", readme, re.S)
    assert block, "README.md lacks the units block"
    assert block.group(1).strip() == markdown_table().strip()


def test_names_are_unique_and_carry_a_unit_suffix():
    names = [q.name for q in QUANTITIES]
    assert len(names) == len(set(names))
    for name in names:
        assert name.endswith(UNIT_SUFFIXES), name


def test_unknown_names_are_refused_by_name():
    with pytest.raises(KeyError, match="gpu_temperature"):
        quantity("gpu_temperature")
