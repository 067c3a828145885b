"""Map values to colours of a plotly colour scale, for HTML elements coloured like the charts."""

from __future__ import annotations

import math
import re

import plotly.colors as pc

NO_DATA_COLOUR = "#3a4552"
_RGB = re.compile(r"rgb\((\d+), ?(\d+), ?(\d+)\)")


def value_colours(values, scale: str, low: float, high: float) -> list[str]:
    """CSS colour of each value on ``scale`` between ``low`` and ``high`` (clipped); grey for NaN."""
    span = (high - low) or 1.0
    fractions = [None if v is None or not math.isfinite(v) else min(1.0, max(0.0, (v - low) / span)) for v in values]
    known = [f for f in fractions if f is not None]
    sampled = iter(pc.sample_colorscale(pc.get_colorscale(scale), known)) if known else iter(())
    return [NO_DATA_COLOUR if f is None else next(sampled) for f in fractions]


def text_colour(background: str) -> str:
    """Black or white, whichever reads better on ``background`` (``rgb(r, g, b)`` or ``#rrggbb``)."""
    match = _RGB.match(background)
    if match:
        r, g, b = (int(x) for x in match.groups())
    else:
        r, g, b = (int(background[i : i + 2], 16) for i in (1, 3, 5))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if luminance > 140 else "#ffffff"


def gradient_css(scale: str, steps: int = 8) -> str:
    """A CSS linear-gradient of ``scale`` from low (left) to high (right), for legends."""
    colours = pc.sample_colorscale(pc.get_colorscale(scale), [i / (steps - 1) for i in range(steps)])
    return f"linear-gradient(to right, {', '.join(colours)})"
