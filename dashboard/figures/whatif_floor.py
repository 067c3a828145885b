"""The what-if floor: every rack coloured by how much worse (red) or better (green) the scenario makes it.

Built on :func:`dashboard.figures.floor.floor_figure` in difference mode, with a
green–grey–red scale oriented so that red is always worse, plus three traces per hall
after the floor's own: the selected racks (white outline), the blast-radius racks
(orange outline), the racks the scenario's edits changed (cyan outline) and invisible rack
markers that box and lasso selection pick up (a heatmap cannot be box-selected).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import plotly.graph_objects as go
from dash import Patch

from dashboard.analysis.aggregates import FLOOR_METRIC_BY_KEY, metric_range
from dashboard.figures.floor import (
    ALERT_LEVELS,
    OVERLAYS_PER_HALL,
    FloorOverlay,
    HallGrid,
    diff_range,
    floor_figure,
    rack_outlines,
)
from twin.site.tables import SiteTables

WORSE_BETTER_SCALE = [[0.0, "#1a9850"], [0.42, "#a6d96a"], [0.5, "#3a3f4b"], [0.58, "#fdae61"], [1.0, "#d73027"]]
SELECTED_COLOUR = "#ffffff"
BLAST_COLOUR = "#ff4fd8"  # magenta: apart from the alert outlines' orange and red
EDITED_COLOUR = "#3ad6f0"
OUTLINES = ("selected racks", "blast radius", "edited racks")  # per hall, in trace order, then the pick markers
PER_HALL = len(OUTLINES) + 1
PICK_TRACE = "racks (box or lasso select)"


def whatif_floor(
    state: SiteTables,
    grids: list[HallGrid],
    changes: dict[str, np.ndarray],
    metric: str,
    worse: np.ndarray,
    selected: np.ndarray,
    blast: np.ndarray,
    off: np.ndarray | None = None,
    edited: np.ndarray | None = None,
) -> go.Figure:
    """The scenario's floor: colour = ``worse`` (+ hotter or more, − cooler or less) of ``metric``; hover = both changes.

    ``changes`` are scenario − baseline per floor metric (NaN for racks the baseline lacks);
    ``selected``, ``blast`` and ``edited`` are rack ids to outline.
    """
    overlay = FloorOverlay(
        off if off is not None else np.zeros(state.n_racks, dtype=bool), np.zeros(state.n_racks, dtype=np.int8)
    )
    shown = dict(changes)
    shown[metric] = worse  # colour by the oriented change; hover of the other metrics stays scenario − baseline
    fig = floor_figure(state, grids, shown, metric, metric_range(state, metric), None, diff=True, overlay=overlay)
    m = FLOOR_METRIC_BY_KEY[metric]
    for i, grid in enumerate(grids):  # two hover numbers per rack, not the floor page's five
        fig.data[i].customdata = change_customdata(grid, changes["max_gpu_temp_c"], changes["rack_power_kw"])
    lo, hi = diff_range(worse, metric_range(state, metric))
    hover = (
        "<b>%{text}</b><br>Δ hottest GPU: %{customdata[0]:+.1f} °C<br>Δ rack power: %{customdata[1]:+.1f} kW"
        "<extra></extra>"
    )
    for i in range(len(grids)):
        fig.data[i].hovertemplate = hover
    fig.update_layout(
        coloraxis=dict(
            colorscale=WORSE_BETTER_SCALE,
            cmin=lo,
            cmax=hi,
            colorbar=dict(title=dict(text=f"Δ {m.label}<br>scenario − baseline [{m.unit}]")),
        ),
        dragmode="select",
        clickmode="event+select",
        uirevision="whatif-floor",
    )
    for i, grid in enumerate(grids):
        axis = "" if i == 0 else str(i + 1)
        edited_racks = edited if edited is not None else np.zeros(0, dtype=np.int64)
        for racks, colour, name, inset in (
            (selected, SELECTED_COLOUR, OUTLINES[0], -0.06),
            (blast, BLAST_COLOUR, OUTLINES[1], 0.1),
            (edited_racks, EDITED_COLOUR, OUTLINES[2], 0.22),
        ):
            x, y = rack_outlines(grid, np.asarray(racks, dtype=np.int64), inset)
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    xaxis=f"x{axis}",
                    yaxis=f"y{axis}",
                    mode="lines",
                    hoverinfo="skip",
                    name=name,
                    showlegend=False,
                    line=dict(width=2.5 if inset < 0.2 else 1.5, color=colour),
                )
            )
        racks = np.flatnonzero(grid.rack_cell_ix >= 0)
        cx = (grid.x_edges_m[grid.rack_cell_ix[racks]] + grid.x_edges_m[grid.rack_cell_ix[racks] + 1]) / 2
        cy = (grid.y_edges_m[grid.rack_cell_iy[racks]] + grid.y_edges_m[grid.rack_cell_iy[racks] + 1]) / 2
        fig.add_trace(
            go.Scatter(
                x=np.round(cx, 3),
                y=np.round(cy, 3),
                xaxis=f"x{axis}",
                yaxis=f"y{axis}",
                mode="markers",
                marker=dict(size=4, opacity=0.0),
                hoverinfo="skip",
                name=PICK_TRACE,
                showlegend=False,
                text=[state.rack_name[r] for r in racks],
                selected=dict(marker=dict(opacity=0.0)),
                unselected=dict(marker=dict(opacity=0.0)),
            )
        )
    for name, colour in (
        ("selected racks", SELECTED_COLOUR),
        ("blast radius (trips with the element)", BLAST_COLOUR),
        ("changed by the edits", EDITED_COLOUR),
    ):
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                name=name,
                line=dict(width=2.5, color=colour),
                showlegend=True,
                hoverinfo="skip",
            )
        )
    return fig


def extra_traces_start(n_halls: int) -> int:
    """Index of the first what-if trace: after the floor's heatmaps, its selection outline, its
    overlays (:data:`~dashboard.figures.floor.OVERLAYS_PER_HALL` per hall) and its three legend
    entries (off, critical, warning: the what-if floor has no fleet marks)."""
    return n_halls + 1 + OVERLAYS_PER_HALL * n_halls + 1 + len(ALERT_LEVELS)


def outline_patch(
    grids: list[HallGrid],
    selected: np.ndarray,
    blast: np.ndarray,
    patch: Patch | None = None,
    edited: np.ndarray | None = None,
) -> Patch:
    """Move the selection and blast-radius outlines (and with ``edited`` the edited racks') of every hall."""
    patch = patch if patch is not None else Patch()
    first = extra_traces_start(len(grids))
    outlines = [(0, selected, -0.06), (1, blast, 0.1)] + ([(2, edited, 0.22)] if edited is not None else [])
    for i, grid in enumerate(grids):
        for k, racks, inset in outlines:
            x, y = rack_outlines(grid, np.asarray(racks, dtype=np.int64), inset)
            patch["data"][first + PER_HALL * i + k]["x"] = x
            patch["data"][first + PER_HALL * i + k]["y"] = y
    return patch


def change_customdata(grid: HallGrid, temp_delta_k: np.ndarray, power_delta_kw: np.ndarray) -> list:
    """Hover numbers per cell: [Δ hottest GPU °C, Δ rack power kW] (None in aisles and for added racks)."""
    pairs = np.stack([np.round(temp_delta_k, 1), np.round(power_delta_kw, 1)], axis=1).tolist()
    return [
        [None if r < 0 else [None if not math.isfinite(v) else v for v in pairs[r]] for r in row]
        for row in grid.cell_rack.tolist()
    ]


def whatif_floor_patch(
    state: SiteTables,
    grids: list[HallGrid],
    changes: dict[str, np.ndarray],
    metric: str,
    worse: np.ndarray,
    selected: np.ndarray,
    blast: np.ndarray,
    off: np.ndarray,
    edited: np.ndarray | None = None,
) -> Patch:
    """The update of a drawn what-if floor of the same layout: colours, the two hover numbers, the colour
    range, the dark hatch and the outlines (rack names and everything else stay)."""
    from dashboard.figures.floor import _overlay_xy, hall_z

    patch = Patch()
    decimals = FLOOR_METRIC_BY_KEY[metric].decimals
    overlay = FloorOverlay(off, np.zeros(state.n_racks, dtype=np.int8))
    for i, grid in enumerate(grids):
        patch["data"][i]["z"] = hall_z(grid, worse, decimals, off)
        patch["data"][i]["customdata"] = change_customdata(grid, changes["max_gpu_temp_c"], changes["rack_power_kw"])
        x, y = _overlay_xy(grid, overlay)[0]  # the hatch of dark racks (the page shows no alert outlines)
        patch["data"][len(grids) + 1 + OVERLAYS_PER_HALL * i]["x"] = x
        patch["data"][len(grids) + 1 + OVERLAYS_PER_HALL * i]["y"] = y
    lo, hi = diff_range(worse, metric_range(state, metric))
    patch["layout"]["coloraxis"]["cmin"] = lo
    patch["layout"]["coloraxis"]["cmax"] = hi
    return outline_patch(grids, selected, blast, patch, edited if edited is not None else np.zeros(0, dtype=np.int64))


def layout_signature(state: SiteTables, metric: str) -> str:
    """What a patch cannot change: the racks, their floor positions and the colour metric."""
    digest = hashlib.sha1()
    for array in (state.rack_x_m, state.rack_y_m, state.rack_hall):
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update("\n".join(state.rack_name).encode())
    return f"{metric}:{digest.hexdigest()[:16]}"
