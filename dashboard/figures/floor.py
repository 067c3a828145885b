"""Hall floor plans: every rack drawn to scale at its position, coloured by one metric.

Each hall is one heatmap trace on a grid whose cells are the rack footprints (with
empty cells for aisles and gaps), so racks scale with zoom and the browser receives
one value per rack.  :func:`hall_grids` maps racks to cells once per site;
:func:`floor_figure` draws, :func:`floor_patch` updates only colours and hover numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from dash import Patch
from plotly.subplots import make_subplots

from dashboard.analysis.aggregates import FLOOR_METRIC_BY_KEY, FLOOR_METRICS, TTT_CAP_S
from dashboard.present import theme
from dashboard.present.theme import base_layout
from twin.site.tables import SiteTables

RACK_DEPTH_M = 1.2  # drawn footprint depth when rows are far apart
HALL_PLOT_HEIGHT_PX = 520
HOVER_KEYS = tuple(m.key for m in FLOOR_METRICS)  # customdata[0..4]; customdata[5] = rack id
RACK_LABELS_MAX = 200  # halls with more racks show row labels only (rack labels would not fit)
ALERT_LEVELS = ((2, "critical"), (1, "warning"))  # overlay traces per hall, in this order
OFF_LEGEND = "off (powered down)"
NODES_OUT_LEGEND = "nodes drained or down"
NODES_OUT_INSET_FRAC = 0.24  # inside the alert outline: a rack can have both
JOB_OUTSET_FRAC = 0.0
OFF_INSET_FRAC = 0.03  # the hatch leaves a thin gap so neighbouring off racks stay distinct
SELECTION_OUTSET_FRAC = 0.06  # the selection outline sits just outside the cell, clear of alert outlines
ALERT_INSET_FRAC = 0.12  # alert outlines sit this far inside the rack cell, so neighbours stay apart
MAP_Y_AUTORANGE = theme.MAP_Y_AUTORANGE


@dataclass(frozen=True)
class FloorOverlay:
    """Per rack: powered off (hatched grey, no metric colour), open-alert level (0 none, 1 warning,
    2 critical) and, from the fleet, nodes out of service (``nodes_out``), the racks of one job
    (``job_racks``, labelled ``job_label``) and a hover line per rack (``notes``)."""

    off: np.ndarray  # bool [n_racks]
    alert_level: np.ndarray  # int [n_racks]
    nodes_out: np.ndarray | None = None  # bool [n_racks]
    job_racks: np.ndarray | None = None  # bool [n_racks]
    job_label: str = ""
    notes: list[str] | None = None

    @staticmethod
    def empty(n_racks: int) -> FloorOverlay:
        return FloorOverlay(np.zeros(n_racks, dtype=bool), np.zeros(n_racks, dtype=np.int8))


@dataclass(frozen=True)
class Categories:
    """A categorical colouring (teams, jobs): per rack an index into ``names``, each drawn in ``colours``."""

    key: str
    label: str
    names: list[str]
    colours: list[str]
    values: np.ndarray  # int [n_racks]

    def colorscale(self) -> list:
        """Stepped: category k fills [k/n, (k+1)/n] on a colour axis from −0.5 to n − 0.5."""
        n = len(self.names)
        steps = []
        for k, colour in enumerate(self.colours):
            steps += [[k / n, colour], [(k + 1) / n, colour]]
        return steps


@dataclass(frozen=True)
class HallGrid:
    """Cells of one hall: ``cell_rack[iy, ix]`` is the rack drawn there or -1 (aisle/gap)."""

    hall: int
    name: str
    x_edges_m: np.ndarray
    y_edges_m: np.ndarray
    cell_rack: np.ndarray
    rack_cell_iy: np.ndarray  # per rack of the site, -1 if in another hall
    rack_cell_ix: np.ndarray


def _axis_cells(centres_m: np.ndarray, size_m: float) -> tuple[np.ndarray, np.ndarray]:
    """Cell edges along one axis for footprints of ``size_m`` at ``centres_m``, gaps as cells.

    Returns (edges, cell index of each unique centre).
    """
    unique = np.unique(np.round(centres_m, 3))
    edges = [unique[0] - size_m / 2]
    cell_of = np.empty(unique.size, dtype=np.int64)
    for i, centre in enumerate(unique):
        cell_of[i] = len(edges) - 1
        upper = centre + size_m / 2
        if i + 1 < unique.size:
            next_lower = unique[i + 1] - size_m / 2
            if next_lower > upper + 1e-6:  # aisle or gap: an empty cell
                edges += [upper, next_lower]
            else:  # touching (or overlapping: split at the midpoint)
                edges.append(min(upper, (centre + unique[i + 1]) / 2))
        else:
            edges.append(upper)
    return np.asarray(edges), cell_of


def _pitch(values: np.ndarray, default: float) -> float:
    diffs = np.diff(np.unique(np.round(values, 3)))
    return float(diffs.min()) if diffs.size else default


def hall_grids(state: SiteTables) -> list[HallGrid]:
    """One :class:`HallGrid` per hall (rack width = smallest x pitch, depth ≤ 1.2 m)."""
    grids = []
    for hall, name in enumerate(state.hall_name):
        racks = np.flatnonzero(state.rack_hall == hall)
        rack_iy = np.full(state.n_racks, -1, dtype=np.int64)
        rack_ix = np.full(state.n_racks, -1, dtype=np.int64)
        if racks.size == 0:
            grids.append(
                HallGrid(hall, name, np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.full((1, 1), -1), rack_iy, rack_ix)
            )
            continue
        x, y = state.rack_x_m[racks], state.rack_y_m[racks]
        width = _pitch(x, 0.6)
        depth = min(RACK_DEPTH_M, 0.8 * _pitch(y, RACK_DEPTH_M / 0.8))
        x_edges, x_cell = _axis_cells(x, width)
        y_edges, y_cell = _axis_cells(y, depth)
        ix = x_cell[np.searchsorted(np.unique(np.round(x, 3)), np.round(x, 3))]
        iy = y_cell[np.searchsorted(np.unique(np.round(y, 3)), np.round(y, 3))]
        cells = np.full((y_edges.size - 1, x_edges.size - 1), -1, dtype=np.int64)
        cells[iy, ix] = racks
        rack_iy[racks], rack_ix[racks] = iy, ix
        grids.append(HallGrid(hall, name, x_edges, y_edges, cells, rack_iy, rack_ix))
    return grids


def _round(values: np.ndarray, decimals: int) -> np.ndarray:
    return np.round(np.asarray(values, dtype=np.float64), decimals)


def hall_z(grid: HallGrid, values: np.ndarray, decimals: int = 1, off: np.ndarray | None = None) -> list:
    """Colour matrix of one hall: the rack's value per cell, None in aisles, unknown and off racks."""
    values = _round(values, decimals)
    if off is not None:
        values = np.where(off, np.nan, values)
    z = np.where(grid.cell_rack >= 0, values[np.maximum(grid.cell_rack, 0)], np.nan)
    return [[None if not math.isfinite(v) else v for v in row] for row in z.tolist()]


def hall_customdata(grid: HallGrid, metrics: dict[str, np.ndarray]) -> list:
    """Hover numbers per cell: the five floor metrics and the rack id (None in aisles)."""
    columns = [_round(metrics[k], FLOOR_METRIC_BY_KEY[k].decimals) for k in HOVER_KEYS]
    stacked = np.stack(columns + [np.arange(columns[0].size, dtype=np.float64)], axis=1)
    rows = []
    for row in grid.cell_rack.tolist():
        rows.append(
            [None if r < 0 else [None if not math.isfinite(v) else v for v in stacked[r].tolist()] for r in row]
        )
    return rows


def _hover_template(diff: bool = False) -> str:
    lines = ["<b>%{text}</b>" + (" · A − B" if diff else "")]
    for i, key in enumerate(HOVER_KEYS):
        m = FLOOR_METRIC_BY_KEY[key]
        label = m.label if key != "time_to_throttle_s" else f"time to throttle (≤ {TTT_CAP_S:.0f})"
        number = f"%{{customdata[{i}]:+.{m.decimals}f}}" if diff else f"%{{customdata[{i}]:.{m.decimals}f}}"
        lines.append(f"{'Δ ' if diff else ''}{label}: {number} {m.unit}")
    return "<br>".join(lines) + "<extra></extra>"


DIFF_COLORSCALE = "RdBu_r"  # diverging: blue where A is below B, white equal, red above


def diff_range(values: np.ndarray, colour_range: tuple[float, float]) -> tuple[float, float]:
    """Symmetric colour range of differences: the 98th percentile of |A − B|, at least 2 % of the metric's range."""
    finite = np.abs(values[np.isfinite(values)])
    floor = 0.02 * (colour_range[1] - colour_range[0])
    top = max(float(np.percentile(finite, 98)) if finite.size else 0.0, floor, 1e-9)
    return -top, top


def _cell_box(grid: HallGrid, rack: int, inset_frac: float = 0.0) -> tuple[float, float, float, float]:
    ix, iy = grid.rack_cell_ix[rack], grid.rack_cell_iy[rack]
    x0, x1 = float(grid.x_edges_m[ix]), float(grid.x_edges_m[ix + 1])
    y0, y1 = float(grid.y_edges_m[iy]), float(grid.y_edges_m[iy + 1])
    dx, dy = (x1 - x0) * inset_frac, (y1 - y0) * inset_frac
    return round(x0 + dx, 3), round(x1 - dx, 3), round(y0 + dy, 3), round(y1 - dy, 3)  # mm: short JSON


def rack_outlines(grid: HallGrid, racks: np.ndarray, inset_frac: float = 0.0) -> tuple[list, list]:
    """Closed rectangles (x, y lists, ``None`` between them) around the cells of ``racks`` in this hall."""
    xs: list = []
    ys: list = []
    for rack in racks:
        if grid.rack_cell_ix[rack] < 0:
            continue
        x0, x1, y0, y1 = _cell_box(grid, int(rack), inset_frac)
        xs += [x0, x1, x1, x0, x0, None]
        ys += [y0, y0, y1, y1, y0, None]
    return xs, ys


OVERLAYS_PER_HALL = 1 + len(ALERT_LEVELS) + 2  # off, alerts by level, nodes out, the job


def _overlay_xy(grid: HallGrid, overlay: FloorOverlay) -> list[tuple[list, list]]:
    """(x, y) of this hall's off hatch, alert outlines, nodes-out marks and job outline, in trace order."""
    out = [rack_outlines(grid, np.flatnonzero(overlay.off), OFF_INSET_FRAC)]
    for level, _name in ALERT_LEVELS:  # an off rack shows as off: alerts about its feed or CDU do not concern it
        out.append(rack_outlines(grid, np.flatnonzero((overlay.alert_level == level) & ~overlay.off), ALERT_INSET_FRAC))
    none = np.zeros(0, dtype=np.int64)
    out.append(
        rack_outlines(
            grid, np.flatnonzero(overlay.nodes_out) if overlay.nodes_out is not None else none, NODES_OUT_INSET_FRAC
        )
    )
    out.append(
        rack_outlines(
            grid, np.flatnonzero(overlay.job_racks) if overlay.job_racks is not None else none, JOB_OUTSET_FRAC
        )
    )
    return out


def _nodes_out_style() -> dict:
    """A near-black square ringed in the text colour: apart from every team, job and metric colour
    (a blue dotted ring vanished on the first team's and job's blue)."""
    return dict(fill="toself", fillcolor=theme.EQUIPMENT_DEAD, line=dict(color=theme.TEXT, width=1))


def _job_style() -> dict:
    return dict(line=dict(color=theme.TEXT, width=2))


def _off_style() -> dict:
    return dict(
        fill="toself",
        fillcolor=theme.EQUIPMENT_OFF,
        line=dict(width=0, color=theme.EQUIPMENT_OFF),
        fillpattern=dict(shape="/", fgcolor=theme.PANEL, bgcolor=theme.EQUIPMENT_OFF, size=6, solidity=0.35),
    )


def _alert_style(name: str) -> dict:
    return dict(line=dict(color=theme.SEVERITY_COLOUR[name], width=2.5 if name == "critical" else 2))


def _line_trace(x: list, y: list, axis: str, group: str, name: str, style: dict, legend: bool = False) -> go.Scatter:
    return go.Scatter(
        x=x,
        y=y,
        xaxis=f"x{axis}",
        yaxis=f"y{axis}",
        mode="lines",
        hoverinfo="skip",
        showlegend=legend,
        legendgroup=group,
        name=name,
        **style,
    )


def _overlay_traces(grids: list[HallGrid], overlay: FloorOverlay) -> list[go.Scatter]:
    """Per hall (:data:`OVERLAYS_PER_HALL` traces): off racks hatched grey, alert outlines by severity,
    racks with nodes out of service, the job's racks; then legend-only entries (a trace with no point
    still draws its swatch), the fleet's only when it has something to show."""
    traces = []
    for i, grid in enumerate(grids):
        axis = "" if i == 0 else str(i + 1)
        (ox, oy), *alerts, (nx, ny), (jx, jy) = _overlay_xy(grid, overlay)
        traces.append(_line_trace(ox, oy, axis, "off", OFF_LEGEND, _off_style()))
        for (ax, ay), (_level, name) in zip(alerts, ALERT_LEVELS):
            traces.append(_line_trace(ax, ay, axis, name, f"{name} alert", _alert_style(name)))
        traces.append(_line_trace(nx, ny, axis, "nodes_out", NODES_OUT_LEGEND, _nodes_out_style()))
        traces.append(_line_trace(jx, jy, axis, "job", overlay.job_label, _job_style()))
    traces.append(_line_trace([None], [None], "", "off", OFF_LEGEND, _off_style(), legend=True))
    for _level, name in ALERT_LEVELS:
        traces.append(_line_trace([None], [None], "", name, f"rack with a {name} alert", _alert_style(name), True))
    if overlay.nodes_out is not None:
        traces.append(
            _line_trace([None], [None], "", "nodes_out", f"rack with {NODES_OUT_LEGEND}", _nodes_out_style(), True)
        )
    if overlay.job_racks is not None:
        traces.append(_line_trace([None], [None], "", "job", overlay.job_label, _job_style(), True))
    return traces


def row_label_annotations(state: SiteTables, grids: list[HallGrid]) -> list[dict]:
    """One label per row, left of its first rack (the row name without the hall prefix)."""
    annotations = []
    for i, grid in enumerate(grids):
        axis = "" if i == 0 else str(i + 1)
        racks = np.flatnonzero(grid.rack_cell_ix >= 0)
        for row in np.unique(state.rack_row[racks]):
            members = racks[state.rack_row[racks] == row]
            first = members[np.argmin(grid.rack_cell_ix[members])]
            x0, _x1, y0, y1 = _cell_box(grid, int(first))
            annotations.append(
                dict(
                    x=x0,
                    y=(y0 + y1) / 2,
                    xref=f"x{axis}",
                    yref=f"y{axis}",
                    xanchor="right",
                    text=short_name(state.row_name[row]),
                    showarrow=False,
                    font=dict(size=10, color=theme.TEXT_MUTED),
                )
            )
    return annotations


def short_name(name: str) -> str:
    """The last part of a hierarchical name: ``H1-R01-K03`` → ``K03``, ``H1-R01`` → ``R01``."""
    return name.rsplit("-", 1)[-1]


def _layout_grid(grids: list[HallGrid]) -> tuple[int, int]:
    """(rows, cols) of hall subplots: tall halls side by side (up to four), wide ones two per row."""
    n_halls = len(grids)
    if n_halls == 1:
        return 1, 1
    tall = all((g.y_edges_m[-1] - g.y_edges_m[0]) > 1.2 * (g.x_edges_m[-1] - g.x_edges_m[0]) for g in grids)
    cols = min(n_halls, 4) if tall else 2
    return math.ceil(n_halls / cols), cols


def floor_figure(
    state: SiteTables,
    grids: list[HallGrid],
    metrics: dict[str, np.ndarray],
    metric_key: str,
    colour_range: tuple[float, float],
    selected_rack: int | None = None,
    diff: bool = False,
    overlay: FloorOverlay | None = None,
    categories: Categories | None = None,
) -> go.Figure:
    """All halls as subplots sharing one colour axis; the selected rack outlined.

    ``categories``: the racks coloured by category (team, job) instead of ``metric_key``, with a
    stepped colour axis whose colour bar names them.

    ``diff``: ``metrics`` are differences A − B, coloured on a diverging scale around zero.
    ``overlay``: powered-off racks drawn hatched grey instead of coloured, racks with
    open alerts outlined in their severity colour; each has a legend entry.  Rows are
    labelled at their left end, racks by their position when the hall is small enough.
    Every hall is drawn x to the right and y downward (see :data:`MAP_Y_AUTORANGE`).
    Trace order: one heatmap per hall, the selection outline, per hall (off, critical,
    warning), then the legend entries.
    """
    overlay = overlay if overlay is not None else FloorOverlay.empty(state.n_racks)
    colorbar: dict = {}
    if categories is not None:
        values, decimals = categories.values.astype(np.float64), 0
        colorscale, title = categories.colorscale(), categories.label
        colour_range = (-0.5, len(categories.names) - 0.5)
        colorbar = dict(tickvals=list(range(len(categories.names))), ticktext=categories.names)
    else:
        metric = FLOOR_METRIC_BY_KEY[metric_key]
        values, decimals = metrics[metric_key], metric.decimals
        colorscale, title = metric.colorscale, f"{metric.label}<br>[{metric.unit}]"
        if diff:
            colorscale, colour_range = DIFF_COLORSCALE, diff_range(metrics[metric_key], colour_range)
            title = f"Δ {metric.label}<br>A − B [{metric.unit}]"
    rows, cols = _layout_grid(grids)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[f"Hall {g.name}" for g in grids],
        horizontal_spacing=0.06 if cols > 2 else 0.08,
        vertical_spacing=0.12 if rows > 1 else 0.0,
    )
    hover = _hover_template(diff)
    for i, grid in enumerate(grids):
        names = hall_names(state, grid, overlay.off, overlay.notes)
        fig.add_trace(
            go.Heatmap(
                x=grid.x_edges_m,
                y=grid.y_edges_m,
                z=hall_z(grid, values, decimals, overlay.off),
                customdata=hall_customdata(grid, metrics),
                text=names,
                hovertemplate=hover,
                coloraxis="coloraxis",
                hoverongaps=False,
                xgap=1,
                ygap=1,
                name=f"Hall {grid.name}",
            ),
            row=i // cols + 1,
            col=i % cols + 1,
        )
    fig.add_trace(_selection_trace(grids, selected_rack, cols))
    for trace in _overlay_traces(grids, overlay):
        fig.add_trace(trace)
    for i in range(len(grids)):
        suffix = "" if i == 0 else str(i + 1)
        fig.update_yaxes(
            scaleanchor=f"x{suffix}", scaleratio=1, title_text="y [m] ↓", row=i // cols + 1, col=i % cols + 1
        )
        fig.update_xaxes(title_text="x [m] →", row=i // cols + 1, col=i % cols + 1, constrain="domain")
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, zeroline=False, constrain="domain", autorange=MAP_Y_AUTORANGE)
    # one layout update: add_annotation per label re-validates the whole list each time (seconds at colossus)
    fig.update_layout(
        annotations=list(fig.layout.annotations)
        + row_label_annotations(state, grids)
        + rack_label_annotations(state, grids)
    )
    fig.update_layout(
        **base_layout(
            height=rows * HALL_PLOT_HEIGHT_PX + 70,
            uirevision="floor-diff" if diff else "floor",
            showlegend=True,
            legend=dict(
                orientation="h", x=0, xanchor="left", y=-0.1, yanchor="top", itemclick=False, itemdoubleclick=False
            ),
            margin=dict(l=56, r=16, t=36, b=64),
            clickmode="event",
            coloraxis=dict(
                colorscale=colorscale,
                cmin=colour_range[0],
                cmax=colour_range[1],
                colorbar=dict(title=dict(text=title, side="right"), thickness=14, **colorbar),
            ),
        )
    )
    return fig


def rack_label_annotations(state: SiteTables, grids: list[HallGrid]) -> list[dict]:
    """Each rack's position label at its cell centre, in halls of at most :data:`RACK_LABELS_MAX` racks.

    Annotations rather than a text trace: a text trace over the heatmap takes its hover and clicks.
    """
    annotations = []
    for i, grid in enumerate(grids):
        racks = np.flatnonzero(grid.rack_cell_ix >= 0)
        if racks.size > RACK_LABELS_MAX:
            continue
        axis = "" if i == 0 else str(i + 1)
        for r in racks:
            x0, x1, y0, y1 = _cell_box(grid, int(r))
            annotations.append(
                dict(
                    x=(x0 + x1) / 2,
                    y=(y0 + y1) / 2,
                    xref=f"x{axis}",
                    yref=f"y{axis}",
                    showarrow=False,
                    text=short_name(state.rack_name[r]),
                    name="rack label",
                    font=dict(size=9, color="#ffffff", shadow="0px 0px 3px #000000, 0px 0px 2px #000000"),
                )
            )
    return annotations


def _selection_trace(grids: list[HallGrid], selected_rack: int | None, cols: int) -> go.Scatter:
    """The selected rack's outline: a white rectangle around its cell (scales with zoom, unlike a marker)."""
    x, y, axis = _selection_xy(grids, selected_rack, cols)
    return go.Scatter(
        x=x,
        y=y,
        xaxis=f"x{axis}",
        yaxis=f"y{axis}",
        mode="lines",
        hoverinfo="skip",
        name="selected rack",
        line=dict(width=3, color="#ffffff"),
        showlegend=False,
    )


def _selection_xy(grids: list[HallGrid], rack: int | None, cols: int) -> tuple[list, list, str]:
    """Outline of ``rack``'s cell slightly outside it, and its subplot's axis suffix (empty lists: none)."""
    for i, grid in enumerate(grids):
        if rack is not None and rack >= 0 and grid.rack_cell_ix[rack] >= 0:
            x, y = rack_outlines(grid, np.array([rack]), -SELECTION_OUTSET_FRAC)
            return x[:-1], y[:-1], "" if i == 0 else str(i + 1)
    return [], [], ""


def hall_names(state: SiteTables, grid: HallGrid, off: np.ndarray, notes: list[str] | None = None) -> list:
    """Hover name per cell: the rack name (" · off" when powered off, then its fleet note), empty in aisles."""
    return [
        [
            ""
            if r < 0
            else state.rack_name[r] + (" · off" if off[r] else "") + (f"<br>{notes[r]}" if notes and notes[r] else "")
            for r in row
        ]
        for row in grid.cell_rack.tolist()
    ]


def floor_patch(
    grids: list[HallGrid],
    metrics: dict[str, np.ndarray],
    metric_key: str,
    overlay: FloorOverlay | None = None,
    state: SiteTables | None = None,
    categories: Categories | None = None,
) -> Patch:
    """Live update: colours (``categories``' when the floor is coloured by them) and hover numbers of
    every hall, and (with ``overlay``) the off hatch, the alert and fleet outlines and (with ``state``)
    the hover names; nothing else."""
    decimals = 0 if categories is not None else FLOOR_METRIC_BY_KEY[metric_key].decimals
    values = categories.values if categories is not None else metrics[metric_key]
    patch = Patch()
    off = overlay.off if overlay is not None else None
    for i, grid in enumerate(grids):
        patch["data"][i]["z"] = hall_z(grid, values, decimals, off)
        patch["data"][i]["customdata"] = hall_customdata(grid, metrics)
        if overlay is not None and state is not None:
            patch["data"][i]["text"] = hall_names(state, grid, overlay.off, overlay.notes)
    if categories is not None:  # the categories themselves change (a job ends, another takes its racks)
        axis = patch["layout"]["coloraxis"]
        axis["colorscale"] = categories.colorscale()
        axis["cmax"] = len(categories.names) - 0.5
        axis["colorbar"]["tickvals"] = list(range(len(categories.names)))
        axis["colorbar"]["ticktext"] = categories.names
    if overlay is not None:
        first = len(grids) + 1
        per_hall = OVERLAYS_PER_HALL
        for i, grid in enumerate(grids):
            for k, (x, y) in enumerate(_overlay_xy(grid, overlay)):
                patch["data"][first + i * per_hall + k]["x"] = x
                patch["data"][first + i * per_hall + k]["y"] = y
    return patch


def selection_patch(grids: list[HallGrid], rack: int | None) -> Patch:
    """Move the selection outline to ``rack`` (or hide it)."""
    _rows, cols = _layout_grid(grids)
    x, y, axis = _selection_xy(grids, rack, cols)
    patch = Patch()
    last = len(grids)
    patch["data"][last]["x"] = x
    patch["data"][last]["y"] = y
    patch["data"][last]["xaxis"] = f"x{axis}"
    patch["data"][last]["yaxis"] = f"y{axis}"
    return patch
