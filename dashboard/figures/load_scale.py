"""Colour of a load or use fraction: viridis over 0–100 %, the critical colour beyond.

Shared by the cooling, power and fabric figures so that "how full" reads the same
everywhere.  Viridis is colour-blind safe and grows in lightness with load.
"""

from __future__ import annotations

import math

import numpy as np
from plotly.colors import sample_colorscale, unlabel_rgb

from dashboard.present import (
    theme,
)  # The same mapping as a plotly colour scale over 0–120 %: viridis to 100 %, critical above.

_VIRIDIS_STOPS = sample_colorscale(theme.SCALE_HOT, [i / 10 for i in range(11)])
LOAD_SCALE_MAX_FRAC = 1.2
LOAD_COLOURSCALE = [[i / 10 / LOAD_SCALE_MAX_FRAC, c] for i, c in enumerate(_VIRIDIS_STOPS)] + [
    [1.0 / LOAD_SCALE_MAX_FRAC + 1e-6, theme.STATUS_CRITICAL],
    [1.0, theme.STATUS_CRITICAL],
]


_STOP_FRAC = np.linspace(0.0, 1.0, len(_VIRIDIS_STOPS))
_STOP_RGB = np.array([unlabel_rgb(c) for c in _VIRIDIS_STOPS], dtype=np.float64)  # [stops, 3]


def load_colours(load_frac) -> list[str]:
    """Colours of many fractions: viridis (linear between 11 stops) to 100 %, critical above, unknown for NaN."""
    values = np.asarray(load_frac, dtype=np.float64).ravel()
    clipped = np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0)
    rgb = np.stack([np.interp(clipped, _STOP_FRAC, _STOP_RGB[:, k]) for k in range(3)], axis=1).round().astype(int)
    out = [f"rgb({r}, {g}, {b})" for r, g, b in rgb]
    for i in np.flatnonzero(~np.isfinite(values)):
        out[i] = theme.STATUS_UNKNOWN
    for i in np.flatnonzero(values > 1.0):
        out[i] = theme.STATUS_CRITICAL
    return out


def load_colour(load_frac: float | None) -> str:
    """Colour of one fraction (None or NaN → the unknown colour)."""
    return load_colours([math.nan if load_frac is None else load_frac])[0]


def translucent(colour: str, alpha: float = 0.45) -> str:
    """``rgb(r, g, b)`` or ``#rrggbb`` → ``rgba(r, g, b, alpha)``."""
    if colour.startswith("#"):
        r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    else:
        r, g, b = (int(float(v)) for v in colour[colour.index("(") + 1 : colour.index(")")].split(",")[:3])
    return f"rgba({r}, {g}, {b}, {alpha})"
