"""Colour of a load or use fraction: viridis over 0–100 %, the critical colour beyond.

Shared by the cooling, power and fabric figures so that "how full" reads the same
everywhere.  Viridis is colour-blind safe and grows in lightness with load.
"""

from __future__ import annotations

import math

from plotly.colors import sample_colorscale

from dashboard import theme

# The same mapping as a plotly colour scale over 0–120 %: viridis to 100 %, critical above.
_VIRIDIS_STOPS = sample_colorscale(theme.SCALE_HOT, [i / 10 for i in range(11)])
LOAD_SCALE_MAX_FRAC = 1.2
LOAD_COLOURSCALE = [[i / 10 / LOAD_SCALE_MAX_FRAC, c] for i, c in enumerate(_VIRIDIS_STOPS)] + [
    [1.0 / LOAD_SCALE_MAX_FRAC + 1e-6, theme.STATUS_CRITICAL],
    [1.0, theme.STATUS_CRITICAL],
]


def load_colour(load_frac: float) -> str:
    """Colour of one fraction (NaN → the unknown colour)."""
    if load_frac is None or not math.isfinite(load_frac):
        return theme.STATUS_UNKNOWN
    if load_frac > 1.0:
        return theme.STATUS_CRITICAL
    return sample_colorscale(theme.SCALE_HOT, [max(0.0, load_frac)])[0]


def load_colours(load_frac) -> list[str]:
    """Colours of many fractions (one plotly colour-scale lookup for the finite ones)."""
    values = [float(v) for v in load_frac]
    inside = [i for i, v in enumerate(values) if math.isfinite(v) and v <= 1.0]
    sampled = sample_colorscale(theme.SCALE_HOT, [max(0.0, values[i]) for i in inside]) if inside else []
    out = [load_colour(v) for v in values]
    for i, colour in zip(inside, sampled):
        out[i] = colour
    return out


def translucent(colour: str, alpha: float = 0.45) -> str:
    """``rgb(r, g, b)`` or ``#rrggbb`` → ``rgba(r, g, b, alpha)``."""
    if colour.startswith("#"):
        r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    else:
        r, g, b = (int(float(v)) for v in colour[colour.index("(") + 1 : colour.index(")")].split(",")[:3])
    return f"rgba({r}, {g}, {b}, {alpha})"
