"""Property: any site file either loads into consistent, finite tables or raises one SiteError line.

Inputs are mutations of the ``demo`` reference site, arbitrary text and arbitrary bytes
(see ``tests/twin/fuzzing.py``; ``CLUSTERTWIN_FUZZ_EXAMPLES`` sets how many).
"""

from __future__ import annotations

import json
import math
import tempfile
import tomllib
from pathlib import Path

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from tests.twin.fuzzing import FUZZ_SETTINGS, bounded, mutated, raw_texts, toml_text
from twin.commands.jsonout import dumps
from twin.commands.sites import check_default_job
from twin.site import limits
from twin.site.catalogue import load_catalogue
from twin.site.errors import SiteError
from twin.site.load import SITES_DIR, build_site, load_site
from twin.site.summary import site_summary

DEMO_DOC = tomllib.loads((SITES_DIR / "demo.toml").read_text())
DEMO_DOC["racks"] = [  # per-rack entries: a change, a removal, an addition (docs/sites.md)
    {"name": "H1-R01-K01", "x_m": 5.8, "rack_type": "hgx-a100-inrow"},
    {"name": "H1-R02-K08", "removed": True},
    {
        "name": "H1-R02-K09",
        "hall": "H1",
        "row": "R02",
        "x_m": 0.4,
        "y_m": 4.2,
        "rack_type": "demo-dlc-h100",
        "feed_a": "H1-BW-R02-A",
        "feed_b": "H1-BW-R02-B",
    },
]
CATALOGUE = load_catalogue()
SCRATCH = Path(tempfile.mkdtemp(prefix="site-fuzz-"))


def _refuse_constant(token):
    raise ValueError(f"not JSON: {token}")


def check(text: str) -> None:
    """Load ``text``: a SiteError of one line, or tables whose figures are finite and within the limits."""
    with bounded():
        try:
            state = build_site(text, "fuzz.toml", CATALOGUE)
            check_default_job(state)
        except SiteError as exc:
            assert str(exc).startswith("fuzz.toml: ") and "\n" not in str(exc), str(exc)
            return
        summary = site_summary(state)
    assert 0 < state.n_gpus <= limits.MAX_GPUS and state.n_switches <= limits.MAX_SWITCHES
    for name in (
        "rack_x_m",
        "rack_y_m",
        "rack_rated_kw",
        "power_rating_kw",
        "source_capacity_mw",
        "loop_flow_lpm",
        "plant_capacity_kw",
        "link_gbps",
    ):
        assert np.isfinite(getattr(state, name)).all(), name
    assert all(math.isfinite(v) for v in summary.values() if isinstance(v, float))
    json.loads(dumps(summary), parse_constant=_refuse_constant)


def test_the_unmutated_demo_passes():
    check(toml_text(DEMO_DOC))


@FUZZ_SETTINGS
@given(mutated(DEMO_DOC))
def test_mutated_site_files(doc):
    check(toml_text(doc))


@FUZZ_SETTINGS
@given(raw_texts())
@example("x = " + "[" * 100_000 + "]" * 100_000)
@example('[site]\nhostname_pattern = "{a\nb}"\n')
def test_arbitrary_text(text):
    check(text)


@FUZZ_SETTINGS
@given(st.binary(max_size=300))
@example(b'[site]\nname = "d\xe9mo"\n')
def test_arbitrary_bytes_in_a_file(data):
    path = SCRATCH / "fuzz.toml"
    path.write_bytes(data)
    with bounded():
        try:
            load_site(path, CATALOGUE)
        except SiteError as exc:
            assert "\n" not in str(exc), str(exc)
