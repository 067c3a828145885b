"""Visual theme of the operator dashboard: colours, colour scales and the plotly template.

The screen theme is a dark control-room palette; ``assets/clustertwin.css`` switches to
dark-on-white for print.  Colour scales are perceptually uniform and colour-blind safe
(viridis for "more is hotter/busier", cividis for "more is better").  Status colours
follow the Okabe–Ito palette so that OK / warning / critical differ in lightness too.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

BACKGROUND = "#11161d"
PANEL = "#19212b"
GRID = "#2b3644"
TEXT = "#dfe6ee"
TEXT_MUTED = "#8fa0b3"
FONT_FAMILY = "Inter, 'DejaVu Sans', 'Liberation Sans', Arial, sans-serif"

# Okabe–Ito status colours (distinguishable with the common colour-vision deficiencies).
STATUS_OK = "#009e73"
STATUS_WARNING = "#e69f00"
STATUS_CRITICAL = "#d55e00"
STATUS_INFO = "#56b4e9"
STATUS_UNKNOWN = "#7f8c99"
# Equipment that is not running: dead (tripped, lost) is near-black under a critical cross,
# off (powered down on purpose) is a neutral grey hatch; neither is on any value scale.
EQUIPMENT_DEAD = "#0b0e12"
EQUIPMENT_OFF = "#6b7785"
SEVERITY_COLOUR = {"critical": STATUS_CRITICAL, "warning": STATUS_WARNING, "info": STATUS_INFO}

# Line colours for trend charts (Okabe–Ito order).
SERIES = ("#56b4e9", "#e69f00", "#009e73", "#f0e442", "#cc79a7", "#0072b2", "#d55e00")
# Categories (teams): Okabe–Ito, then three of ColorBrewer's Dark2 that stay apart from them on a dark panel.
CATEGORY = SERIES + ("#e7298a", "#a6761d", "#b3b3ff")
FREE = "#3a4554"  # a rack whose GPUs are all free: darker than the panel's text, lighter than the panel
OTHER = "#c5ccd6"  # a rack held by a job without a colour of its own: light, apart from free and the off hatch

# One orientation on every floor map: x to the right, y downward from the hall origin
# (row 1 at the top, as on the site drawings); y axes of maps use this autorange.
MAP_Y_AUTORANGE = "reversed"

SCALE_HOT = "Viridis"  # higher = hotter / more loaded
SCALE_GOOD = "Cividis"  # higher = more headroom

TEMPLATE_NAME = "clustertwin_dark"


def _template() -> go.layout.Template:
    axis = dict(gridcolor=GRID, zerolinecolor=GRID, linecolor=GRID, tickcolor=GRID, automargin=True)
    return go.layout.Template(
        layout=dict(
            paper_bgcolor=PANEL,
            plot_bgcolor=PANEL,
            font=dict(family=FONT_FAMILY, color=TEXT, size=12),
            colorway=list(SERIES),
            xaxis=axis,
            yaxis=axis,
            legend=dict(bgcolor="rgba(0,0,0,0)", orientation="h", y=1.02, yanchor="bottom", x=0, xanchor="left"),
            margin=dict(l=56, r=16, t=36, b=40),
            hoverlabel=dict(bgcolor=BACKGROUND, font=dict(family=FONT_FAMILY, color=TEXT)),
            title=dict(font=dict(size=14), x=0.01, xanchor="left"),
        )
    )


def register_template() -> str:
    """Register the dashboard template with plotly (idempotent) and return its name."""
    pio.templates[TEMPLATE_NAME] = _template()
    return TEMPLATE_NAME


def base_layout(**overrides) -> dict:
    """Layout keywords shared by every dashboard figure; ``overrides`` win."""
    if TEMPLATE_NAME not in pio.templates:  # building the template costs ~2 ms: once per process, not per figure
        register_template()
    layout = dict(template=TEMPLATE_NAME, autosize=True)
    layout.update(overrides)
    return layout
