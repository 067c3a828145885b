"""Number formatting for display: fixed decimals, SI prefixes, dashes for unknown values."""

from __future__ import annotations

import math

UNKNOWN = "–"
NOT_RECORDED = "not recorded"  # tooltip of an unknown value (no reading, or a replayed moment the bundle lacks)


def fmt(value: float | None, decimals: int = 1) -> str:
    """``value`` with ``decimals`` decimals and thousands separators; ``–`` when unknown."""
    if value is None or not math.isfinite(value):
        return UNKNOWN
    return f"{value:,.{decimals}f}"


def fmt_si(value: float | None, decimals: int = 1) -> str:
    """Large counts with an SI prefix: ``41.2 M``, ``3.1 k``; ``–`` when unknown."""
    if value is None or not math.isfinite(value):
        return UNKNOWN
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.{decimals}f} {prefix}"
    return f"{value:.{decimals}f}"


def fmt_pct(frac: float | None, decimals: int = 0) -> str:
    """A 0–1 fraction as a percentage number (without the % sign; the unit goes beside it)."""
    if frac is None or not math.isfinite(frac):
        return UNKNOWN
    return f"{100.0 * frac:.{decimals}f}"


def fmt_node_age(seconds: float) -> str:
    """How long a node has been out of service: ``40 min``, ``5.2 h``, ``3.1 d`` (``–`` unknown)."""
    if not math.isfinite(seconds):
        return "–"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 172_800 else f"{seconds / 86_400:.1f} d"


def fmt_duration(seconds: float | None) -> str:
    """``45 s``, ``12 min``, ``≥ 60 min`` style durations."""
    if seconds is None or math.isnan(seconds):
        return UNKNOWN
    if math.isinf(seconds) or seconds >= 3600:
        return "≥ 60 min"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"
