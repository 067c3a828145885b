"""docs/validation.md must show exactly what the code computes for its validation cases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from twin.training import validation

DOC = Path(__file__).resolve().parents[3] / "docs" / "validation.md"


@pytest.mark.slow
def test_validation_document_is_reproduced_by_the_code():
    text = DOC.read_text()
    match = re.search(r"<!-- BEGIN GENERATED[^>]*-->\n(.*)\n<!-- END GENERATED -->", text, re.S)
    assert match, "generated section markers missing"
    assert match.group(1) == validation.markdown_tables()


def test_every_case_has_a_source_and_an_error():
    for row in validation.throughput_rows() + validation.reliability_rows():
        assert row[-1] and row[-2]
