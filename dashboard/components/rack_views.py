"""HTML views of one rack for the drill-down: the elevation and per-GPU grids.

Plain HTML (cheap to render, prints well) coloured with the same scales as the charts;
each view has a legend with its unit.
"""

from __future__ import annotations

import math

import numpy as np
from dash import html

from dashboard.analysis.rack_detail import NODE_POWER_NOTE
from dashboard.present.colour_scale import gradient_css, text_colour, value_colours
from dashboard.present.theme import SCALE_GOOD, SCALE_HOT


def scale_legend(scale: str, low: float, high: float, unit: str, decimals: int = 0) -> html.Div:
    """A horizontal colour bar with its range and unit."""
    return html.Div(
        [
            html.Span(f"{low:.{decimals}f}"),
            html.Span(className="legend-bar", style={"background": gradient_css(scale)}),
            html.Span(f"{high:.{decimals}f} {unit}"),
        ],
        className="scale-legend",
    )


def elevation_view(node_rows: list[dict], cdu_label: str | None, temp_range_c: tuple[float, float]) -> html.Div:
    """The rack from the front: top slot first, each node coloured by its hottest GPU; the CDU at the bottom."""
    rows = sorted(node_rows, key=lambda r: -r["slot"])
    colours = value_colours([r["max_gpu_temp_c"] for r in rows], SCALE_HOT, *temp_range_c)
    units = []
    for row, colour in zip(rows, colours):
        notes = []
        if row["gpus_throttled"]:
            notes.append(f"{row['gpus_throttled']} throttled")
        if row["gpus_down"]:
            notes.append(f"{row['gpus_down']} down")
        temp = "–" if not math.isfinite(row["max_gpu_temp_c"]) else f"{row['max_gpu_temp_c']:.1f} °C"
        units.append(
            html.Div(
                [
                    html.Span(f"slot {row['slot']}", className="slot"),
                    html.Span(row["name"], className="host"),
                    html.Span(
                        f"{temp} · GPUs {row['gpu_power_kw']:.1f} kW" + (" · " + ", ".join(notes) if notes else ""),
                        className="vals",
                    ),
                ],
                className="rack-unit" + (" has-issue" if notes else ""),
                style={"background": colour, "color": text_colour(colour)},
                title=f"{row['name']}: max GPU {temp}, {row['gpu_power_kw']:.1f} kW {NODE_POWER_NOTE}",
            )
        )
    if cdu_label:
        units.append(
            html.Div(
                [html.Span("CDU", className="slot"), html.Span(cdu_label, className="host")], className="rack-unit cdu"
            )
        )
    return html.Div(
        [
            html.H3("Elevation (front, top slot first)"),
            html.Div(units, className="elevation"),
            scale_legend(SCALE_HOT, *temp_range_c, "°C max GPU"),
        ],
    )


def gpu_grid_view(
    grid: np.ndarray,
    node_labels: list[str],
    title: str,
    unit: str,
    colour_range: tuple[float, float],
    decimals: int = 0,
    higher_is_better: bool = False,
    annotations: np.ndarray | None = None,
) -> html.Div:
    """Node × GPU-index table of one per-GPU quantity, cells coloured and labelled with values."""
    scale = SCALE_GOOD if higher_is_better else SCALE_HOT
    colours = value_colours(grid.ravel().tolist(), scale, *colour_range)
    head = html.Tr([html.Th("node")] + [html.Th(str(i), className="num") for i in range(grid.shape[1])])
    body = []
    for r, label in enumerate(node_labels):
        cells = [html.Th(label, className="node")]
        for c in range(grid.shape[1]):
            value = grid[r, c]
            colour = colours[r * grid.shape[1] + c]
            note = annotations[r, c] if annotations is not None else ""
            text = "" if not math.isfinite(value) else f"{value:.{decimals}f}"
            cells.append(
                html.Td(
                    [text] + ([html.Br(), html.Span(note, className="note")] if note else []),
                    style={"background": colour, "color": text_colour(colour)},
                    title=f"{label} GPU {c}: {text or 'no data'} {unit}" + (f" ({note})" if note else ""),
                    className="num" + (" flagged" if note else ""),
                )
            )
        body.append(html.Tr(cells))
    return html.Div(
        [
            html.H3(f"{title} [{unit}]"),
            html.Table([html.Thead(head), html.Tbody(body)], className="gpu-grid"),
            html.Div("columns: GPU index on the node", className="muted small"),
            scale_legend(scale, *colour_range, unit, decimals),
        ],
    )
