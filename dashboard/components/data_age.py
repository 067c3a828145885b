"""Data-age badges: how old each ingest source's last good reading is.

Fresh readings show a green dot; older than :data:`STALE_AFTER_S` the badge turns amber
and the number italic; older than :data:`DEAD_AFTER_S` (or never) it turns red-striped.
"""

from __future__ import annotations

import math

from dash import html

STALE_AFTER_S = 10.0
DEAD_AFTER_S = 60.0


def age_class(age_s: float | None) -> str:
    """``fresh``, ``stale`` or ``dead`` for a reading ``age_s`` seconds old (None/NaN/inf = dead)."""
    if age_s is None or not math.isfinite(age_s) or age_s >= DEAD_AFTER_S:
        return "dead"
    return "stale" if age_s >= STALE_AFTER_S else "fresh"


def format_age(age_s: float | None) -> str:
    """Human age: ``0.8 s``, ``42 s``, ``7 min``, ``3.1 h``, ``never``."""
    if age_s is None or not math.isfinite(age_s):
        return "never"
    if age_s < 10:
        return f"{age_s:.1f} s"
    if age_s < 120:
        return f"{age_s:.0f} s"
    if age_s < 7200:
        return f"{age_s / 60:.0f} min"
    return f"{age_s / 3600:.1f} h"


def age_badges(source_ages_s: dict[str, float]) -> list[html.Span]:
    """One badge per source, sorted by name."""
    badges = []
    for source in sorted(source_ages_s):
        age = source_ages_s[source]
        cls = age_class(age)
        badges.append(
            html.Span(
                [html.Span(className="age-dot"), f"{source} {format_age(age)}"],
                className=f"age-badge {cls}",
                title=f"{source}: last good reading {format_age(age)} ago ({cls})",
                **{"data-source": source, "data-age-class": cls},
            )
        )
    return badges or [html.Span("no sources", className="age-badge dead")]
