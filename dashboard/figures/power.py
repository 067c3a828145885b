"""Power-page figures: the one-line diagram, load and N-1 headroom, generation and swing.

Pure functions of a :class:`~twin.site.tables.SiteTables` and a :class:`~twin.engine.snapshot.Snapshot`.
The one-line diagram stays readable at any scale: busways are always grouped per UPS
in the site view, and any column with more than :data:`MAX_NODES_PER_COLUMN` elements
is grouped per parent.  Focusing on an element shows its path and full subtree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from dashboard.analysis.equipment import PowerStatus, power_status
from dashboard.figures.load_scale import LOAD_COLOURSCALE, LOAD_SCALE_MAX_FRAC, load_colours
from dashboard.figures.stacked_axes import stacked_layout
from dashboard.present import theme
from dashboard.present.formatting import NOT_RECORDED, UNKNOWN
from dashboard.present.ordering import order_by
from twin.engine.snapshot import GPU_DOWN, Snapshot
from twin.site.tables import POWER_KINDS, SOURCE_KINDS, SiteTables

MAX_NODES_PER_COLUMN = 48
LABEL_NODES_PER_COLUMN = 24  # columns with more nodes show names on hover only
KIND_SYMBOL = {
    "source": "diamond",
    "switchgear": "square",
    "transformer": "circle",
    "ups": "hexagon",
    "busway": "triangle-right",
}
METRICS = {"power_n1_load_frac": "N-1 load", "load_frac": "load"}
DEAD_LEGEND = "de-energised (tripped or lost)"
ALONE_LEGEND = "no redundancy (partner feed dead)"
BADGE_OFFSET = (0.1, -0.2)  # (columns, rows) from a node to its no-redundancy badge


@dataclass
class DiagramNode:
    """One drawn node: a single element or a group of siblings of one kind."""

    key: str  # "p<id>" element, "g<parent>:<kind>" group of a parent's children, "s<id>" source
    label: str
    column: int  # 0 sources, 1 + power depth
    members: np.ndarray  # element ids (empty for sources)
    parent_key: str | None
    value_frac: float  # metric (max over members)
    hover: str
    bus: int = -1  # for sources: the switchgear fed
    dead: int = 0  # members (elements or sources) de-energised
    all_dead: bool = False  # every member de-energised: drawn in the dead colour
    alone: int = 0  # members carrying racks without redundancy


def _subtree(state: SiteTables, root: int) -> np.ndarray:
    """Boolean mask of ``root`` and all elements below it (parents come before children)."""
    mask = np.zeros(state.n_power, dtype=bool)
    mask[root] = True
    for depth in range(int(state.power_depth[root]) + 1, int(state.power_depth.max()) + 1):
        idx = np.flatnonzero(state.power_depth == depth)
        mask[idx] = mask[state.power_parent[idx]]
    return mask


def _ancestors(state: SiteTables, element: int) -> list[int]:
    chain = []
    parent = int(state.power_parent[element])
    while parent >= 0:
        chain.append(parent)
        parent = int(state.power_parent[parent])
    return chain


def _root(state: SiteTables, element: int) -> int:
    chain = _ancestors(state, element)
    return chain[-1] if chain else element


def _pct(value: float) -> str:
    """A load fraction as a percentage; unknown (a replayed moment's N-1 load) says so."""
    return f"{value:.0%}" if math.isfinite(value) else f"{UNKNOWN} ({NOT_RECORDED})"


def _element_hover(state: SiteTables, snap: Snapshot, e: int) -> str:
    usable = state.power_rating_kw[e] * state.power_max_util_frac[e]
    return (
        f"{POWER_KINDS[state.power_kind[e]]}, side {'AB'[int(state.power_side[e])]}"
        f"<br>load {snap.feed_power_kw[e]:,.0f} kW of {usable:,.0f} kW usable ({_pct(snap.load_frac[e])})"
        f"<br>worst after one failure (N-1) {_pct(snap.power_n1_load_frac[e])}"
    )


def _group_hover(state: SiteTables, snap: Snapshot, members: np.ndarray, metric: str) -> str:
    values = getattr(snap, metric)[members]
    worst = members[int(np.nanargmax(np.nan_to_num(values, nan=-1.0)))]
    top = float(np.max(values[np.isfinite(values)])) if np.isfinite(values).any() else math.nan
    return (
        f"{members.size} × {POWER_KINDS[state.power_kind[members[0]]]}"
        f"<br>total load {np.nansum(snap.feed_power_kw[members]):,.0f} kW"
        f"<br>worst {METRICS[metric]} {_pct(top)} ({state.power_name[worst]})"
    )


def diagram_nodes(
    state: SiteTables,
    snap: Snapshot,
    focus: int | None = None,
    metric: str = "power_n1_load_frac",
    status: PowerStatus | None = None,
) -> list[DiagramNode]:
    """The nodes of the one-line diagram, parents before children, in drawing order.

    ``status`` (default: inferred from the loads) marks dead members and feeds left without redundancy.
    """
    values = getattr(snap, metric)
    status = status if status is not None else power_status(state, snap)
    dead_source = ~status.source_live
    if focus is None:
        shown = np.ones(state.n_power, dtype=bool)
        roots = np.flatnonzero(state.power_parent < 0)
    else:
        shown = _subtree(state, focus)
        shown[_ancestors(state, focus)] = True
        roots = np.array([_root(state, focus)])
    nodes: list[DiagramNode] = []
    node_of = np.full(state.n_power, -1)
    # sources feeding the shown switchgear; more than two of a kind on one bus are grouped
    fed = np.flatnonzero(np.isin(state.source_bus, roots))
    for bus in np.unique(state.source_bus[fed]):
        for kind_id in np.unique(state.source_kind[fed]):
            members = fed[(state.source_bus[fed] == bus) & (state.source_kind[fed] == kind_id)]
            if members.size == 0:
                continue
            kind = SOURCE_KINDS[kind_id]
            groups = [members] if members.size > 2 else [members[i : i + 1] for i in range(members.size)]
            for group in groups:
                out_mw = float(np.nansum(snap.source_power_mw[group]))
                cap_mw = float(state.source_capacity_mw[group].sum())
                soc = snap.battery_soc_frac[group]
                soc_text = f"<br>state of charge {np.nanmean(soc):.0%}" if np.isfinite(soc).any() else ""
                single = group.size == 1
                nodes.append(
                    DiagramNode(
                        key=f"s{group[0]}" if single else f"s{bus}:{kind}",
                        column=0,
                        members=np.zeros(0, np.int64),
                        label=state.source_name[group[0]] if single else f"{group.size} × {kind}",
                        parent_key=None,
                        value_frac=out_mw / cap_mw if cap_mw > 0 else math.nan,
                        hover=f"{kind}: {out_mw:,.1f} of {cap_mw:,.1f} MW{soc_text}",
                    )
                )
                nodes[-1].bus = int(bus)
                nodes[-1].dead = int(dead_source[group].sum())
                nodes[-1].all_dead = nodes[-1].dead == group.size
                if nodes[-1].dead:
                    nodes[-1].hover += f"<br><b>{nodes[-1].dead} of {group.size} tripped or lost</b>"
    source_nodes = list(nodes)
    nodes.clear()
    max_depth = int(state.power_depth.max()) if state.n_power else -1
    for depth in range(max_depth + 1):
        idx = np.flatnonzero(shown & (state.power_depth == depth))
        idx = idx[np.lexsort((idx, state.power_side[idx]))] if depth == 0 else idx
        busway_level = POWER_KINDS[state.power_kind[idx[0]]] == "busway" if idx.size else False
        group = idx.size > MAX_NODES_PER_COLUMN or (busway_level and focus is None)
        if focus is not None and idx.size and depth > int(state.power_depth[focus]):
            group = idx.size > MAX_NODES_PER_COLUMN
        if depth == 0 or not group:
            for e in idx:
                parent = int(state.power_parent[e])
                node_of[e] = len(nodes)
                nodes.append(
                    DiagramNode(
                        key=f"p{e}",
                        label=state.power_name[e],
                        column=depth + 1,
                        members=np.array([e]),
                        parent_key=nodes[node_of[parent]].key if parent >= 0 else None,
                        value_frac=float(values[e]),
                        hover=_element_hover(state, snap, e),
                    )
                )
                _mark(nodes[-1], np.array([e]), state, status)
            continue
        parents = state.power_parent[idx]
        parent_nodes = node_of[parents]
        for pn in np.unique(parent_nodes):
            members = idx[parent_nodes == pn]
            node_of[members] = len(nodes)
            member_values = values[members]
            nodes.append(
                DiagramNode(
                    key=f"g{nodes[pn].key}:{depth}",
                    label=f"{members.size} × {POWER_KINDS[state.power_kind[members[0]]]}",
                    column=depth + 1,
                    members=members,
                    parent_key=nodes[pn].key,
                    value_frac=float(np.nanmax(member_values)) if np.isfinite(member_values).any() else math.nan,
                    hover=_group_hover(state, snap, members, metric),
                )
            )
            _mark(nodes[-1], members, state, status)
    # sources hang off their switchgear
    for n in source_nodes:
        bus = n.bus
        n.parent_key = nodes[node_of[bus]].key if node_of[bus] >= 0 else None
    return source_nodes + nodes


def _mark(node: DiagramNode, members: np.ndarray, state: SiteTables, status: PowerStatus) -> None:
    """Count the node's dead members and members left alone, and say which in its hover."""
    dead = members[~status.power_live[members]]
    alone = members[status.no_redundancy[members] & status.power_live[members]]
    node.dead, node.alone = int(dead.size), int(alone.size)
    node.all_dead = dead.size == members.size
    if dead.size:
        node.hover += (
            "<br><b>de-energised: "
            + ", ".join(state.power_name[e] for e in dead[:4])
            + (" …" if dead.size > 4 else "")
            + "</b>"
        )
        if members.size > 1:
            node.label += f" · {dead.size} dead"
    if alone.size:
        node.hover += (
            "<br><b>no redundancy: "
            + ", ".join(state.power_name[e] for e in alone[:4])
            + (" …" if alone.size > 4 else "")
            + " carry racks alone</b>"
        )


def _positions(nodes: list[DiagramNode]) -> dict[str, float]:
    """Vertical position of each node: leaves in order, a parent at its children's mean.

    Sources sit beside the switchgear they feed (stacked around its position, never
    reaching into the stack of a neighbouring switchgear).
    """
    children: dict[str, list[str]] = {}
    for n in nodes:
        if n.column > 0 and n.parent_key is not None:
            children.setdefault(n.parent_key, []).append(n.key)
    y: dict[str, float] = {}
    counter = [0.0]

    def place(key: str) -> float:
        kids = children.get(key, [])
        if not kids:
            y[key] = counter[0]
            counter[0] += 1.0
        else:
            y[key] = float(np.mean([place(k) for k in kids]))
        return y[key]

    for n in nodes:
        if n.column == 1:
            place(n.key)
            counter[0] += 0.5  # gap between switchgear
    by_bus: dict[str | None, list[DiagramNode]] = {}
    for n in nodes:
        if n.column == 0:
            by_bus.setdefault(n.parent_key, []).append(n)
    centres = sorted(y.get(bus, 0.0) if bus is not None else 0.0 for bus in by_bus)
    for bus, sources in by_bus.items():
        centre = y.get(bus, 0.0) if bus is not None else 0.0
        # stacks of neighbouring buses must not interleave: keep a gap of one spacing between them
        nearest = min((abs(c - centre) for c in centres if c != centre), default=math.inf)
        spread = min(2.0, nearest / len(sources)) if len(sources) > 1 else 0.0
        for i, n in enumerate(sources):
            y[n.key] = centre + (i - (len(sources) - 1) / 2) * spread
    return y


def node_colours(nodes: list[DiagramNode]) -> list[str]:
    """Marker colour of each node: the load colour, the dead colour when every member is dead."""
    colours = load_colours([n.value_frac for n in nodes])
    return [theme.EQUIPMENT_DEAD if n.all_dead else c for n, c in zip(nodes, colours)]


def _overlay_trace(name: str, points: list[tuple[float, float, str]], marker: dict) -> dict:
    """A legend-carrying marker trace over nodes (always present, possibly empty, so patches keep indices)."""
    return dict(
        type="scatter",
        x=[p[0] for p in points],
        y=[p[1] for p in points],
        mode="markers",
        name=name,
        customdata=[p[2] for p in points],
        hovertemplate="%{customdata}<extra></extra>",
        marker=marker,
        showlegend=True,
    )


def power_tree_figure(
    state: SiteTables, snap: Snapshot, focus: int | None = None, metric: str = "power_n1_load_frac", detail=None
) -> go.Figure:
    """One-line diagram: sources → switchgear → transformers → UPS → busways, coloured by ``metric``.

    Node ``customdata`` carries the key of the element ("p<id>") or group for click
    drill-down; colour is the (worst) load fraction, critical above 100 %.  De-energised
    elements and lost sources (the twin's ``detail`` when given, else inferred from loads)
    are drawn near-black, outlined and crossed in the critical colour; feeds left carrying racks alone wear a
    warning badge.  Both have a legend entry.  Trace order: edges, one per column,
    dead crosses, badges, colour bar.
    """
    status = power_status(state, snap, detail)
    nodes = diagram_nodes(state, snap, focus, metric, status)
    y = _positions(nodes)
    by_key = {n.key: n for n in nodes}
    edge_x: list[float | None] = []
    edge_y: list[float | None] = []
    for n in nodes:
        if n.parent_key is None or n.parent_key not in by_key:
            continue
        p = by_key[n.parent_key]
        x0, x1 = (n.column, p.column) if n.column == 0 else (p.column, n.column)
        y0, y1 = (y[n.key], y[p.key]) if n.column == 0 else (y[p.key], y[n.key])
        xm = (x0 + x1) / 2
        edge_x += [x0, xm, xm, x1, None]
        edge_y += [y0, y0, y1, y1, None]
    fig = go.Figure(
        dict(
            type="scatter",
            x=edge_x,
            y=edge_y,
            mode="lines",
            line=dict(color=theme.GRID, width=1),
            hoverinfo="skip",
            showlegend=False,
        )
    )
    columns = sorted({n.column for n in nodes})
    for column in columns:
        col_nodes = [n for n in nodes if n.column == column]
        kind = "source" if column == 0 else POWER_KINDS[state.power_kind[col_nodes[0].members[0]]]
        label_it = len(col_nodes) <= LABEL_NODES_PER_COLUMN
        fig.add_trace(
            dict(
                type="scatter",
                x=[column] * len(col_nodes),
                y=[y[n.key] for n in col_nodes],
                mode="markers+text" if label_it else "markers",
                text=[n.label for n in col_nodes] if label_it else None,
                textposition="top center",
                textfont=dict(size=10, color=theme.TEXT_MUTED),
                marker=dict(
                    symbol=KIND_SYMBOL.get(kind, "circle"),
                    size=13 if label_it else 9,
                    color=node_colours(col_nodes),
                    line=dict(
                        color=[theme.STATUS_CRITICAL if n.all_dead else theme.BACKGROUND for n in col_nodes],
                        width=[2 if n.all_dead else 1 for n in col_nodes],
                    ),
                ),
                customdata=np.array([[n.key, n.label, n.hover] for n in col_nodes], dtype=object),
                hovertemplate="<b>%{customdata[1]}</b><br>%{customdata[2]}<extra></extra>",
                name=kind,
                showlegend=False,
            )
        )
    dead = [(n.column, y[n.key], f"<b>{n.label}</b>: {n.dead} de-energised") for n in nodes if n.dead]
    alone = [
        (n.column + BADGE_OFFSET[0], y[n.key] + BADGE_OFFSET[1], f"<b>{n.label}</b>: {n.alone} without redundancy")
        for n in nodes
        if n.alone
    ]
    fig.add_trace(
        _overlay_trace(
            DEAD_LEGEND,
            dead,
            dict(
                symbol="x-thin-open",
                size=17,
                color=theme.STATUS_CRITICAL,
                line=dict(color=theme.STATUS_CRITICAL, width=3),
            ),
        )
    )
    fig.add_trace(
        _overlay_trace(
            ALONE_LEGEND,
            alone,
            dict(symbol="circle", size=10, color=theme.STATUS_WARNING, line=dict(color=theme.BACKGROUND, width=1.5)),
        )
    )
    # a colour bar for the metric (invisible marker carrying the scale)
    fig.add_trace(
        dict(
            type="scatter",
            x=[None],
            y=[None],
            mode="markers",
            showlegend=False,
            hoverinfo="skip",
            marker=dict(
                colorscale=LOAD_COLOURSCALE,
                cmin=0,
                cmax=LOAD_SCALE_MAX_FRAC * 100,
                color=[0],
                showscale=True,
                colorbar=dict(
                    title=dict(text=f"{METRICS[metric]} (%)", side="right"), ticksuffix=" %", thickness=10, len=0.8
                ),
            ),
        )
    )
    column_titles = ["sources"] + [
        POWER_KINDS[state.power_kind[next(n for n in nodes if n.column == c).members[0]]]
        if any(n.column == c for n in nodes)
        else ""
        for c in range(1, max(columns) + 1)
    ]
    scope = "site" if focus is None else state.power_name[focus]
    n_rows = max(y.values()) + 1 if y else 1
    fig.update_layout(
        **theme.base_layout(
            title=f"One-line diagram ({scope}); colour = {METRICS[metric]} of the usable rating",
            xaxis=dict(
                tickmode="array",
                tickvals=list(range(len(column_titles))),
                ticktext=column_titles,
                range=[-0.5, len(column_titles) - 0.5],
                showgrid=False,
                zeroline=False,
                side="top",
                fixedrange=True,
            ),
            yaxis=dict(visible=False, autorange="reversed", range=None),
            uirevision=f"power-tree-{scope}",
            margin=dict(l=16, r=16, t=64, b=40),
            height=max(360, min(900, int(22 * n_rows) + 120)),
            hovermode="closest",
            legend=dict(
                orientation="h", x=0, xanchor="left", y=0, yanchor="top", itemclick=False, itemdoubleclick=False
            ),
        )
    )
    return fig


def tree_patch_fields(fig: go.Figure) -> dict[int, tuple[str, ...]]:
    """The fields a live tick changes in :func:`power_tree_figure`'s traces (by index)."""
    n = len(fig.data)
    fields = {
        i: ("marker.color", "marker.line.color", "marker.line.width", "customdata", "text") for i in range(1, n - 3)
    }
    fields.update({i: ("x", "y", "customdata") for i in (n - 3, n - 2)})
    return fields


def element_from_key(key: str | None) -> int | None:
    """Element id a clicked node stands for: the element, or the parent of a group."""
    if not key:
        return None
    if key.startswith("p"):
        return int(key[1:])
    if key.startswith("gp"):
        return int(key[2:].split(":")[0])
    return None


def headroom_figure(state: SiteTables, snap: Snapshot) -> go.Figure:
    """Every power element: load (%) against worst load after a single failure (N-1, %)."""
    fig = go.Figure()
    for k, kind in enumerate(POWER_KINDS):
        idx = np.flatnonzero(state.power_kind == k)
        if idx.size == 0:
            continue
        fig.add_trace(
            dict(
                type="scattergl" if idx.size > 2000 else "scatter",
                x=np.round(snap.load_frac[idx] * 100, 1),
                y=np.round(snap.power_n1_load_frac[idx] * 100, 1),
                mode="markers",
                name=kind,
                marker=dict(symbol=KIND_SYMBOL[kind], size=8, color=theme.SERIES[k], line=dict(width=0)),
                customdata=np.array(state.power_name, dtype=object)[idx],
                hovertemplate="<b>%{customdata}</b><br>load %{x:.0f} %<br>N-1 %{y:.0f} %<extra>" + kind + "</extra>",
            )
        )
    limit = dict(color=theme.STATUS_CRITICAL, dash="dash", width=1)
    top_pct = max(110.0, float(np.nanmax(np.r_[snap.load_frac, snap.power_n1_load_frac, 0.0])) * 100 + 5)
    shapes = [
        dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=100, y1=100, line=limit),
        dict(type="line", yref="paper", y0=0, y1=1, xref="x", x0=100, x1=100, line=limit),
    ]
    fig.update_layout(
        **theme.base_layout(
            title="Load and N-1 load of each element (of usable rating)",
            xaxis=dict(title="load now (%)", ticksuffix=" %", range=[0, top_pct]),
            yaxis=dict(title="load after worst single failure (%)", ticksuffix=" %", range=[0, top_pct]),
            uirevision="power-headroom",
            margin=dict(l=64, r=16, t=84, b=48),
            shapes=shapes,
        )
    )
    return fig


def worst_elements(
    state: SiteTables, snap: Snapshot, n: int = 10, metric: str = "power_n1_load_frac", detail=None
) -> list[dict]:
    """Rows of the ``n`` elements with the highest ``metric`` (display units, rounded), ties by name.

    De-energised elements (the twin's ``detail``, else inferred from loads) come first with
    state "DEAD", no headroom and the critical row class: their 0 % load is not spare capacity.
    """
    values = np.nan_to_num(getattr(snap, metric), nan=-1.0)
    dead = ~power_status(state, snap, detail).power_live
    order = order_by([~dead, -values], state.power_name)[:n]
    usable = state.power_rating_kw * state.power_max_util_frac
    return [
        {
            "element": state.power_name[e],
            "state": "DEAD" if dead[e] else "",
            "kind": POWER_KINDS[state.power_kind[e]],
            "side": "AB"[int(state.power_side[e])],
            "load_kw": round(float(snap.feed_power_kw[e]), 0),
            "usable_kw": round(float(usable[e]), 0),
            "load_pct": round(float(snap.load_frac[e]) * 100, 1),
            "n1_pct": round(float(snap.power_n1_load_frac[e]) * 100, 1),
            "n1_headroom_kw": None if dead[e] else round(float(usable[e] * (1.0 - snap.power_n1_load_frac[e])), 0),
            "row_class": "row-critical" if dead[e] else None,
        }
        for e in order
    ]


def _num(value: float) -> str:
    """Two decimals below 10, one above (MW and MW/s figures span 0.01 to 1,000)."""
    return f"{value:,.2f}" if abs(value) < 10 else f"{value:,.1f}"


def generation_figure(state: SiteTables, snap: Snapshot, detail=None) -> go.Figure:
    """Output and spare capacity (MW) per source kind; batteries show their state of charge.

    Sources the twin's ``detail`` reports lost are named in the label and their capacity left out.
    """
    live = power_status(state, snap, detail).source_live
    kinds, output, capacity, notes = [], [], [], []
    for k, kind in enumerate(SOURCE_KINDS):
        every = np.flatnonzero(state.source_kind == k)
        if every.size == 0:
            continue
        idx = every[live[every]]
        lost = every.size - idx.size
        label = f"{kind} ({every.size})" + (f"<br><b>{lost} lost</b>" if lost else "")
        note = ""
        if kind == "battery":
            soc = snap.battery_soc_frac[idx]
            energy = state.source_energy_mwh[idx]
            if np.isfinite(soc).any():
                stored = float(np.nansum(soc * energy))
                label += f"<br>{stored / energy.sum():.0%} charged" if energy.sum() > 0 else ""
                note = f"{_num(stored)} of {_num(float(energy.sum()))} MWh stored, lowest battery {np.nanmin(soc):.0%}"
            else:
                note = "charge unknown"
        kinds.append(label)
        output.append(float(np.nansum(snap.source_power_mw[idx])))
        capacity.append(float(state.source_capacity_mw[idx].sum()))
        notes.append(note)
    spare = [max(0.0, c - o) for c, o in zip(capacity, output)]
    fig = go.Figure()
    fig.add_trace(
        dict(
            type="bar",
            y=kinds,
            x=output,
            orientation="h",
            name="output",
            marker_color=theme.SERIES[0],
            customdata=notes,
            text=[f"{_num(o)} MW" for o in output],
            textposition="inside",
            textangle=0,
            hovertemplate="%{y}: %{x:,.2f} MW output<br>%{customdata}<extra></extra>",
        )
    )
    fig.add_trace(
        dict(
            type="bar",
            y=kinds,
            x=spare,
            orientation="h",
            name="spare capacity",
            marker_color=theme.GRID,
            text=[f"of {_num(c)} MW" for c in capacity],
            textposition="outside",
            hovertemplate="%{y}: %{x:,.2f} MW spare<extra></extra>",
            cliponaxis=False,
        )
    )
    fig.update_layout(
        **theme.base_layout(
            title=None,
            barmode="stack",
            xaxis=dict(title="power (MW)", rangemode="tozero"),
            yaxis=dict(autorange="reversed"),
            uirevision="power-generation",
            margin=dict(l=110, r=90, t=56, b=40),
        )
    )
    return fig


TREND_SERIES = (  # column, legend name, line dash
    ("facility_power_mw", "facility load", "solid"),
    ("it_power_mw", "IT load", "solid"),
    ("generation_capacity_mw", "available generation", "dash"),
)


def supply_trend_figure(trend, max_points: int = 300) -> go.Figure:
    """IT and facility load against available generation over the trend window (MW).

    ``trend`` is the view's trend frame (UTC index); it is thinned to ``max_points`` rows.
    Always one trace per series (empty without data) so live patches keep trace indices.
    """
    if trend is not None and len(trend) > max_points:
        trend = trend.iloc[:: -(-len(trend) // max_points)]
    fig = go.Figure()
    for i, (column, name, dash) in enumerate(TREND_SERIES):
        has = trend is not None and column in trend.columns
        fig.add_trace(
            dict(
                type="scatter",
                x=trend.index if has else [],
                y=trend[column].to_numpy() if has else [],
                name=name,
                mode="lines",
                line=dict(color=(theme.SERIES[1], theme.SERIES[0], theme.STATUS_CRITICAL)[i], dash=dash, width=2),
                hovertemplate="%{y:,.1f} MW<extra>" + name + "</extra>",
            )
        )
    fig.update_layout(
        **theme.base_layout(
            title=None,
            xaxis=dict(title=None),
            yaxis=dict(title="power (MW)", rangemode="tozero"),
            uirevision="power-trend",
            hovermode="x unified",
            margin=dict(l=56, r=16, t=56, b=36),
        )
    )
    return fig


def follow_capability(state: SiteTables, snap: Snapshot, detail=None) -> dict:
    """What supply can follow: swing (MW) within one phase of the step, generation ramp (MW/s).

    From the twin's swing report when ``detail`` (a TickDetail) is given; otherwise the
    same rule as :func:`twin.physics.swing.project_swing` from the Snapshot: generation ramp ×
    the shorter phase of the largest job (compute share = its ``compute*`` breakdown over
    the step time) + the spare power of batteries with charge left.
    """
    if detail is not None and detail.swing is not None:
        return {
            "followable_mw": float(detail.swing.followable_mw),
            "generation_ramp_mw_per_s": float(detail.swing.generation_ramp_mw_per_s),
        }
    battery = state.source_kind == SOURCE_KINDS.index("battery")
    gen_ramp = float(state.source_ramp_mw_per_s[~battery & (state.source_capacity_mw > 0)].sum())
    charged = battery & (np.nan_to_num(snap.battery_soc_frac, nan=0.0) > 0.0)
    headroom = float(
        np.maximum(state.source_capacity_mw[charged] - np.nan_to_num(snap.source_power_mw[charged]), 0.0).sum()
    )
    phase_s = math.inf
    if snap.jobs:
        job = max(snap.jobs, key=lambda j: np.asarray(j.gpu_ids).size)
        compute_s = sum(v for k, v in job.breakdown_s.items() if k.startswith("compute"))
        if job.step_time_s > 0 and 0.0 < compute_s < job.step_time_s:
            share = compute_s / job.step_time_s
            phase_s = job.step_time_s * min(share, 1.0 - share)
    followable = gen_ramp * phase_s + headroom if math.isfinite(phase_s) else math.inf
    return {"followable_mw": followable, "generation_ramp_mw_per_s": gen_ramp}


def swing_figure(state: SiteTables, snap: Snapshot, detail=None) -> go.Figure:
    """Training power swing against what supply can follow (two bullet bars)."""
    can = follow_capability(state, snap, detail)
    layout = stacked_layout(
        "swing amplitude vs swing supply can follow (MW)", "swing ramp at step edges vs generation ramp (MW/s)"
    )
    rows = (
        ("", snap.swing_amplitude_mw, can["followable_mw"], "MW"),
        ("2", snap.swing_ramp_mw_per_s, can["generation_ramp_mw_per_s"], "MW/s"),
    )
    traces = []
    for axis, demand, capability, unit in rows:
        ok = math.isfinite(demand) and demand <= capability
        shown = capability if math.isfinite(capability) else 0.0
        traces.append(
            dict(
                type="bar",
                xaxis=f"x{axis}",
                yaxis=f"y{axis}",
                y=["can follow"],
                x=[shown],
                orientation="h",
                marker_color=theme.GRID,
                showlegend=False,
                textposition="auto",
                cliponaxis=False,
                text=[f"{_num(capability)} {unit}" if math.isfinite(capability) else "no swing phase"],
                hovertemplate=f"supply can follow %{{x:,.2f}} {unit}<extra></extra>",
            )
        )
        traces.append(
            dict(
                type="bar",
                xaxis=f"x{axis}",
                yaxis=f"y{axis}",
                y=["swing"],
                x=[demand],
                orientation="h",
                marker_color=theme.STATUS_OK if ok else theme.STATUS_CRITICAL,
                showlegend=False,
                text=[f"{_num(demand)} {unit}" if math.isfinite(demand) else f"{UNKNOWN} ({NOT_RECORDED})"],
                textposition="auto",
                cliponaxis=False,
                hovertemplate=f"training swing %{{x:,.2f}} {unit}<extra></extra>",
            )
        )
        layout[f"xaxis{axis}"]["rangemode"] = "tozero"
    fig = go.Figure(traces)
    fig.update_layout(
        **theme.base_layout(
            title=None, uirevision="power-swing", margin=dict(l=90, r=16, t=32, b=36), bargap=0.25, **layout
        )
    )
    return fig


def generation_limits(state: SiteTables, snap: Snapshot, detail=None) -> dict:
    """IT budget under the available generation, GPUs runnable at full power, a common GPU cap.

    IT budget (MW) = (generation capacity − site overhead) / PUE.
    A GPU at full power costs its TDP plus its node's base power shared over the node's GPUs.
    Runnable GPUs = ⌊IT budget / full-power cost⌋ (at most the GPUs not down).
    Cap (W) = (IT budget − base power of nodes with a live GPU) / live GPUs, within
    [min power limit, TDP]; ``cap_feasible`` is False when even the minimum does not fit.
    With ``detail`` (a TickDetail) the twin's own site balance replaces these estimates.
    """
    pue = snap.pue_ratio if math.isfinite(snap.pue_ratio) and snap.pue_ratio >= 1.0 else 1.0
    budget_mw = max(0.0, (snap.generation_capacity_mw - state.site_overhead_mw) / pue)
    live = snap.gpu_state < GPU_DOWN  # neither down nor powered off
    gpus_per_node = np.bincount(state.gpu_node, minlength=state.n_nodes).clip(1, None)
    base_share_w = (state.node_base_power_w / gpus_per_node)[state.gpu_node]
    tdp_w = state.gpu_spec_array("tdp_w")
    full_cost_w = np.sort((tdp_w + base_share_w)[live])
    runnable = int(np.searchsorted(np.cumsum(full_cost_w), budget_mw * 1e6, side="right"))
    live_nodes = np.unique(state.gpu_node[live])
    n_live = int(live.sum())
    cap_w = (budget_mw * 1e6 - state.node_base_power_w[live_nodes].sum()) / n_live if n_live else math.nan
    min_w = float(state.gpu_spec_array("min_power_limit_w")[live].max()) if n_live else math.nan
    max_w = float(tdp_w[live].min()) if n_live else math.nan
    result = {
        "it_power_mw": float(snap.it_power_mw),
        "facility_power_mw": float(snap.facility_power_mw),
        "generation_capacity_mw": float(snap.generation_capacity_mw),
        "it_budget_mw": budget_mw,
        "gpus_live": n_live,
        "gpus_runnable_full_power": runnable,
        "gpu_cap_w": float(min(max(cap_w, min_w), max_w)) if math.isfinite(cap_w) else math.nan,
        "cap_feasible": bool(math.isfinite(cap_w) and cap_w >= min_w),
        "source": "dashboard estimate",
    }
    balance = detail.balance if detail is not None else None
    if balance is not None:
        result.update(
            gpus_runnable_full_power=int(balance.gpus_at_full_power),
            gpu_cap_w=float(balance.power_cap_w),
            cap_feasible=bool(balance.cap_fits),
            generation_n1_capacity_mw=float(balance.generation_n1_capacity_mw),
            source="twin",
        )
    return result
