"""Display formatting: decimals, SI prefixes, durations and unknown values."""

from __future__ import annotations

import math

from dashboard.present.formatting import fmt, fmt_duration, fmt_pct, fmt_si


def test_unknown_values_are_dashes_never_zero():
    assert {fmt(math.nan), fmt_si(None), fmt_pct(math.inf), fmt_duration(math.nan)} == {"–"}


def test_numbers():
    assert fmt(1234.56, 1) == "1,234.6"
    assert fmt_si(15_234_000) == "15.2 M" and fmt_si(980.0) == "980.0" and fmt_si(2.5e12) == "2.5 T"
    assert fmt_pct(0.4237, 1) == "42.4"


def test_durations():
    assert [fmt_duration(s) for s in (45, 600, 3600, math.inf)] == ["45 s", "10 min", "≥ 60 min", "≥ 60 min"]
