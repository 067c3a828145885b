"""Map values to colours of a plotly colour scale, for HTML elements coloured like the charts."""

from __future__ import annotations

import functools
import math
import re

import plotly.colors as pc

NO_DATA_COLOUR = "#3a4552"
_RGB = re.compile(r"rgb\((\d+), ?(\d+), ?(\d+)\)")


@functools.lru_cache(maxsize=32)
def _named_scale(scale: str) -> tuple:
    """Plotly's named colour scale ``scale`` as (fraction, colour) pairs, looked up once (~0.3 ms a lookup)."""
    return tuple((fraction, colour) for fraction, colour in pc.get_colorscale(scale))


def _colorscale(scale: str) -> list[list]:
    """A fresh copy of the named scale in the [fraction, colour] lists plotly validates (it takes a tuple
    pair for a colour)."""
    return [[fraction, colour] for fraction, colour in _named_scale(scale)]


def value_colours(values, scale: str, low: float, high: float) -> list[str]:
    """CSS colour of each value on ``scale`` between ``low`` and ``high`` (clipped); grey for NaN."""
    span = (high - low) or 1.0
    fractions = [None if v is None or not math.isfinite(v) else min(1.0, max(0.0, (v - low) / span)) for v in values]
    known = [f for f in fractions if f is not None]
    sampled = iter(pc.sample_colorscale(_colorscale(scale), known)) if known else iter(())
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
    colours = pc.sample_colorscale(_colorscale(scale), [i / (steps - 1) for i in range(steps)])
    return f"linear-gradient(to right, {', '.join(colours)})"
