"""Cooling-page figures: the plant → loop → CDU heat-flow diagram, CDU capacity use and throttle risk.

Pure functions of a :class:`~twin.site.tables.SiteTables` and a :class:`~twin.engine.snapshot.Snapshot`.
Everything is aggregated server-side: the site view groups CDUs per (loop, hall); a
loop's drill-down groups its CDUs per row once it has more than :data:`MAX_CDU_NODES`.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from dashboard.analysis.equipment import cdu_lost, cdu_off
from dashboard.figures.load_scale import load_colour, load_colours, translucent
from dashboard.present import theme
from dashboard.present.ordering import order_by
from twin.engine.snapshot import Snapshot
from twin.site.tables import SiteTables

LOST_USE_FRAC = 9.99  # stands for "lost" where a use fraction picks the colour (beyond any real use)
MAX_CDU_NODES = 40  # beyond this a loop's CDUs are shown per row
MAX_ROW_NODES = 14  # beyond this neighbouring rows are merged so labels do not overlap
USE_BINS_FRAC = np.round(np.arange(0.0, 1.30001, 0.05), 2)  # capacity-use histogram edges
# time-to-throttle classes (upper bounds, seconds) and their labels
TTT_EDGES_S = (30.0, 60.0, 120.0, 300.0, 600.0, math.inf)
TTT_LABELS = ("< 30 s", "30–60 s", "1–2 min", "2–5 min", "5–10 min", "> 10 min")


def _nan_to_zero(values: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(values), values, 0.0)


def cdu_row(state: SiteTables) -> np.ndarray:
    """Row of each CDU: the row of the first rack it cools (-1 if it cools none)."""
    row = np.full(state.n_cdus, -1, dtype=np.int32)
    order = np.arange(state.n_racks)[::-1]  # first rack wins: write in reverse
    row[state.rack_cdu[order]] = state.rack_row[order]
    return row


def _flow_weighted(temp_c: np.ndarray, flow_lpm: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Flow-weighted mean temperature per group (NaN where no known reading)."""
    ok = np.isfinite(temp_c) & np.isfinite(flow_lpm) & (flow_lpm > 0)
    weight = np.bincount(group[ok], flow_lpm[ok], n_groups)
    total = np.bincount(group[ok], flow_lpm[ok] * temp_c[ok], n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight > 0, total / weight, np.nan)


def cdu_groups(state: SiteTables, loop: int | None) -> tuple[np.ndarray, list[str], list[int]]:
    """Group id per CDU (-1 = not shown), group labels and each group's loop.

    Site view (``loop is None``): one group per (loop, hall).  Loop view: every CDU
    of the loop, or one group per row when the loop has more than ``MAX_CDU_NODES``.
    """
    group = np.full(state.n_cdus, -1, dtype=np.int64)
    cdu_hall = np.full(state.n_cdus, 0, dtype=np.int64)
    cdu_hall[state.rack_cdu] = state.rack_hall
    if loop is None:
        key = state.cdu_loop.astype(np.int64) * len(state.hall_name) + cdu_hall
        uniq, group = np.unique(key, return_inverse=True)
        counts = np.bincount(group, minlength=uniq.size)
        labels = [f"{state.hall_name[k % len(state.hall_name)]} · {n} CDUs" for k, n in zip(uniq, counts)]
        return group, labels, [int(k // len(state.hall_name)) for k in uniq]
    members = np.flatnonzero(state.cdu_loop == loop)
    if members.size <= MAX_CDU_NODES:
        group[members] = np.arange(members.size)
        return group, [state.cdu_name[c] for c in members], [loop] * members.size
    rows = cdu_row(state)[members]
    uniq, inverse = np.unique(rows, return_inverse=True)
    per_node = -(-uniq.size // MAX_ROW_NODES)  # rows merged into one node
    inverse = inverse // per_node
    group[members] = inverse
    counts = np.bincount(inverse)
    labels = []
    for k, n in enumerate(counts):
        first, last = uniq[k * per_node], uniq[min((k + 1) * per_node, uniq.size) - 1]
        name = state.row_name[first] if first >= 0 else "no row"
        if last != first:
            name += "–" + state.row_name[last].split("-")[-1]
        labels.append(f"{name} · {n} CDUs")
    return group, labels, [loop] * counts.size


def _node_positions(n_plants: int, n_loops: int, n_groups: int) -> tuple[list[float], list[float]]:
    """Sankey node centres (0–1): CDU groups left, loops middle, plants right, each column evenly spaced."""

    def column(n: int) -> list[float]:
        return [(i + 0.5) / n for i in range(n)]

    x = [0.999] * n_plants + [0.5] * n_loops + [0.001] * n_groups
    return x, column(n_plants) + column(n_loops) + column(n_groups)


def cooling_flow_figure(state: SiteTables, snap: Snapshot, loop: int | None = None) -> go.Figure:
    """Sankey of heat (kW) from CDU groups through facility-water loops to plants.

    Link width is heat in kW; hover shows coolant flow (L/min) and supply → return
    temperatures (°C).  CDU-group nodes are coloured by their worst CDU's capacity use.
    """
    n_loops = len(state.loop_name)
    loops = list(range(n_loops)) if loop is None else [int(loop)]
    plants = sorted({int(state.loop_plant[lp]) for lp in loops})
    group, group_labels, group_loop = cdu_groups(state, loop)
    n_groups = len(group_labels)
    shown = group >= 0
    g = group[shown]
    heat_kw = _nan_to_zero(snap.cdu_heat_kw)[shown]
    flow_lpm = _nan_to_zero(snap.coolant_flow_lpm)[shown]
    group_heat = np.bincount(g, heat_kw, n_groups)
    group_flow = np.bincount(g, flow_lpm, n_groups)
    group_supply = _flow_weighted(snap.coolant_supply_temp_c[shown], snap.coolant_flow_lpm[shown], g, n_groups)
    group_return = _flow_weighted(snap.coolant_return_temp_c[shown], snap.coolant_flow_lpm[shown], g, n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        use = snap.cdu_heat_kw[shown] / snap.cdu_capacity_kw[shown]
    worst_use = np.full(n_groups, -np.inf)
    np.maximum.at(worst_use, g, np.where(np.isfinite(use), use, -np.inf))
    worst_use[~np.isfinite(worst_use)] = np.nan
    group_lost = np.bincount(g, cdu_lost(state, snap)[shown], n_groups).astype(np.int64)
    worst_use[group_lost > 0] = LOST_USE_FRAC  # a lost CDU is worse than any use: the critical colour

    labels, colours, hover = [], [], []
    plant_node = {}
    for p in plants:
        plant_node[p] = len(labels)
        labels.append(state.plant_name[p])
        colours.append(theme.STATUS_INFO)
        hover.append(
            f"capacity {state.plant_capacity_kw[p] / 1e3:,.1f} MW<br>supply set-point {state.plant_supply_setpoint_c[p]:.1f} °C"
        )
    loop_node = {}
    for lp in loops:
        loop_node[lp] = len(labels)
        sup, ret = snap.loop_supply_temp_c[lp], snap.loop_return_temp_c[lp]
        labels.append(f"{state.loop_name[lp]} · {sup:.1f}→{ret:.1f} °C")
        colours.append(theme.SERIES[5])
        hover.append(
            f"heat {snap.loop_heat_kw[lp] / 1e3:,.2f} MW of {state.loop_capacity_kw[lp] / 1e3:,.1f} MW"
            f"<br>design facility flow {state.loop_flow_lpm[lp]:,.0f} L/min"
        )
    first_group = len(labels)
    for k in range(n_groups):
        labels.append(f"{group_labels[k]} · {group_supply[k]:.1f}→{group_return[k]:.1f} °C")
        colours.append(load_colour(float(worst_use[k])))
        lost_text = f"<br><b>{group_lost[k]} CDU(s) lost</b>" if group_lost[k] else ""
        hover.append(
            f"secondary flow {group_flow[k]:,.0f} L/min<br>worst CDU capacity use {worst_use[k]:.0%}{lost_text}"
        )

    src, dst, value, link_colour, link_hover = [], [], [], [], []
    for k in range(n_groups):
        src.append(first_group + k)
        dst.append(loop_node[group_loop[k]])
        value.append(float(group_heat[k]))
        link_colour.append(translucent(colours[first_group + k]))
        link_hover.append(f"{group_heat[k]:,.0f} kW · {group_flow[k]:,.0f} L/min secondary")
    for lp in loops:
        src.append(loop_node[lp])
        dst.append(plant_node[int(state.loop_plant[lp])])
        value.append(float(_nan_to_zero(snap.loop_heat_kw[lp : lp + 1])[0]))
        link_colour.append("rgba(86, 180, 233, 0.35)")
        link_hover.append(
            f"{snap.loop_heat_kw[lp]:,.0f} kW · {state.loop_flow_lpm[lp]:,.0f} L/min facility water (design)"
        )

    node_x, node_y = _node_positions(len(plants), len(loops), n_groups)
    fig = go.Figure(
        dict(
            type="sankey",
            arrangement="fixed",  # nodes do not move; a drag handler would swallow node clicks
            valueformat=",.0f",
            valuesuffix=" kW",
            node=dict(
                label=labels,
                color=colours,
                customdata=hover,
                pad=8,
                thickness=14,
                x=node_x,
                y=node_y,
                hovertemplate="%{label}<br>%{customdata}<extra></extra>",
                line=dict(width=0),
            ),
            link=dict(
                source=src,
                target=dst,
                value=value,
                color=link_colour,
                customdata=link_hover,
                hovertemplate="%{source.label} → %{target.label}<br>%{customdata}<extra></extra>",
            ),
        )
    )
    scope = "site" if loop is None else state.loop_name[int(loop)]
    fig.update_layout(
        **theme.base_layout(
            title=f"Heat flow, CDUs → facility loops → plants ({scope}); width = heat (kW)",
            uirevision=f"cooling-flow-{scope}",
            margin=dict(l=8, r=8, t=40, b=8),
            font=dict(size=11),
        )
    )
    return fig


def cdu_use_frac(snap: Snapshot) -> np.ndarray:
    """Heat over capacity at the present supply temperature, per CDU (NaN if unknown)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        use = snap.cdu_heat_kw / snap.cdu_capacity_kw
    return np.where(np.isfinite(use), use, np.nan)


def cdu_use_histogram(state: SiteTables, snap: Snapshot, loop: int | None = None) -> go.Figure:
    """Histogram (pre-binned) of CDU capacity use in %, bars beyond 100 % in the critical colour.

    Lost CDUs (too few pumps) and CDUs whose racks are all powered off are left out and
    counted in the title: their near-zero use would read as spare capacity.
    """
    use = cdu_use_frac(snap)
    lost, off = cdu_lost(state, snap), cdu_off(state, snap) & ~cdu_lost(state, snap)
    scope = np.ones(state.n_cdus, dtype=bool) if loop is None else state.cdu_loop == loop
    counted = scope & ~lost & ~off
    known = use[counted & np.isfinite(use)]
    clipped = np.clip(known, 0.0, USE_BINS_FRAC[-1] - 1e-9)
    counts, edges = np.histogram(clipped, bins=USE_BINS_FRAC)
    centres_pct = (edges[:-1] + edges[1:]) / 2 * 100
    colours = load_colours(np.where(edges[:-1] < 1.0, edges[:-1], 1.01))
    fig = go.Figure(
        dict(
            type="bar",
            x=centres_pct,
            y=counts,
            width=4.6,
            marker_color=colours,
            customdata=np.stack([edges[:-1] * 100, edges[1:] * 100], axis=1),
            hovertemplate="%{customdata[0]:.0f}–%{customdata[1]:.0f} %: %{y} CDUs<extra></extra>",
        )
    )
    unknown = int(counted.sum() - known.size)
    notes = [
        f"{unknown} unknown" if unknown else "",
        f"{int((scope & lost).sum())} lost" if (scope & lost).any() else "",
        f"{int((scope & off).sum())} off" if (scope & off).any() else "",
    ]
    note = "".join(f" · {n}" for n in notes if n)
    fig.update_layout(
        **theme.base_layout(
            title=f"CDU capacity use at present supply temperature ({known.size} CDUs{note})",
            xaxis=dict(title="heat / capacity (%)", range=[0, USE_BINS_FRAC[-1] * 100], ticksuffix=" %"),
            yaxis=dict(title="CDUs (count)"),
            bargap=0.05,
            uirevision="cooling-use",
            showlegend=False,
            shapes=[
                dict(
                    type="line",
                    yref="paper",
                    y0=0,
                    y1=1,
                    xref="x",
                    x0=100,
                    x1=100,
                    line=dict(color=theme.STATUS_CRITICAL, dash="dash", width=1),
                )
            ],
        )
    )
    return fig


def worst_cdus(state: SiteTables, snap: Snapshot, n: int = 10, loop: int | None = None) -> list[dict]:
    """Rows of the ``n`` worst CDUs: lost ones first, then by capacity use, ties by name (display units).

    A lost CDU (fewer pumps running than it needs) shows no use and no headroom: it
    cools nothing, whatever its heat reading says.  Its row carries the critical class.  A CDU
    whose racks are all powered off says so ("racks off") and keeps its place by use.
    """
    use = cdu_use_frac(snap)
    lost = cdu_lost(state, snap)
    off = cdu_off(state, snap) & ~lost
    candidates = np.arange(state.n_cdus) if loop is None else np.flatnonzero(state.cdu_loop == loop)
    order = order_by([~lost, -np.nan_to_num(use, nan=-1.0)], state.cdu_name, candidates)[:n]
    spec_pumps = state.cdu_spec_array("pumps")
    return [
        {
            "cdu": state.cdu_name[c],
            "state": "LOST" if lost[c] else "racks off" if off[c] else "",
            "loop": state.loop_name[int(state.cdu_loop[c])],
            "heat_kw": round(float(snap.cdu_heat_kw[c]), 1),
            "capacity_kw": 0.0 if lost[c] else round(float(snap.cdu_capacity_kw[c]), 1),
            "use_pct": None if lost[c] or not np.isfinite(use[c]) else round(float(use[c]) * 100, 1),
            "supply_c": round(float(snap.coolant_supply_temp_c[c]), 1),
            "return_c": round(float(snap.coolant_return_temp_c[c]), 1),
            "flow_lpm": round(float(snap.coolant_flow_lpm[c]), 0),
            "pumps": f"{int(snap.pumps_running_count[c])}/{int(spec_pumps[c])}",
            "row_class": "row-critical" if lost[c] else None,
        }
        for c in order
    ]


def throttle_classes(time_to_throttle_s: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Counts per :data:`TTT_LABELS` class, racks that never throttle (inf), unknown (NaN)."""
    known = time_to_throttle_s[~np.isnan(time_to_throttle_s)]
    never = int(np.isposinf(known).sum())
    finite = known[np.isfinite(known)]
    edges = np.concatenate([[0.0], np.array(TTT_EDGES_S[:-1]), [np.inf]])
    counts, _ = np.histogram(finite, bins=edges)
    return counts, never, int(time_to_throttle_s.size - known.size)


def throttle_risk_figure(scenarios_s: dict[str, np.ndarray]) -> go.Figure:
    """Racks by time to throttle (s) for each failure scenario, as grouped bars."""
    fig = go.Figure()
    for i, (scenario, ttt_s) in enumerate(scenarios_s.items()):
        counts, never, unknown = throttle_classes(np.asarray(ttt_s, dtype=np.float64))
        fig.add_trace(
            dict(
                type="bar",
                x=list(TTT_LABELS) + ["never"],
                y=list(counts) + [never],
                name=scenario if not unknown else f"{scenario} ({unknown} racks unknown)",
                marker_color=theme.SERIES[i % len(theme.SERIES)],
                hovertemplate=f"{scenario}<br>%{{x}}: %{{y}} racks<extra></extra>",
            )
        )
    fig.update_layout(
        **theme.base_layout(
            title=None,
            xaxis=dict(title="time to throttle"),
            margin=dict(l=56, r=16, t=48, b=40),
            yaxis=dict(title="racks (count)"),
            barmode="group",
            uirevision="cooling-ttt",
        )
    )
    return fig


def throttle_risk_rows(
    state: SiteTables, scenarios_s: dict[str, np.ndarray], n: int = 10, racks: np.ndarray | None = None
) -> list[dict]:
    """The ``n`` racks that throttle soonest under any scenario (time in s), with the scenario and CDU.

    ``racks`` limits the candidates (e.g. one loop's racks); racks that never throttle are left out.
    """
    names = list(scenarios_s)
    if not names:
        return []
    stack = np.stack([np.where(np.isnan(v), np.inf, np.asarray(v, dtype=np.float64)) for v in scenarios_s.values()])
    worst = stack.argmin(axis=0)
    soonest = stack.min(axis=0)
    candidates = np.arange(state.n_racks) if racks is None else np.asarray(racks)
    candidates = candidates[np.isfinite(soonest[candidates])]
    order = order_by([soonest], state.rack_name, candidates)[:n]
    return [
        {
            "rack": state.rack_name[r],
            "cdu": state.cdu_name[int(state.rack_cdu[r])],
            "scenario": names[int(worst[r])],
            "time_to_throttle_s": round(float(soonest[r]), 0),
        }
        for r in order
    ]
