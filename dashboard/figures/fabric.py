"""Fabric-page figures: switch matrices per tier, tier summary, one switch's ports, job bandwidth.

Pure functions of a :class:`~twin.site.tables.SiteTables` and a :class:`~twin.engine.snapshot.Snapshot`.
At colossus scale (~4,000 switches, ~200,000 links) nothing is sent per link: each
switch's uplinks are reduced to mean utilisation and links down (``np.bincount`` over
``link_a``), and switches are drawn as a pods × position-in-pod matrix.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.load_scale import LOAD_COLOURSCALE, LOAD_SCALE_MAX_FRAC
from dashboard.figures.stacked_axes import stacked_layout
from dashboard.present import theme
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_OK, GPU_THROTTLED, JobStatus, Snapshot
from twin.physics.fabric import job_fabric_report
from twin.site.tables import TIER_CORE, TIER_LEAF, TIER_SPINE, SiteTables

TIER_NAMES = {TIER_LEAF: "leaf", TIER_SPINE: "spine", TIER_CORE: "core"}
UTIL_BINS_FRAC = np.round(np.arange(0.0, 1.00001, 0.05), 2)
GPU_STATE_COLOUR = {
    GPU_OK: theme.STATUS_OK,
    GPU_THROTTLED: theme.STATUS_WARNING,
    GPU_DOWN: theme.STATUS_CRITICAL,
    GPU_OFF: theme.STATUS_UNKNOWN,
}
GPU_STATE_NAME = {GPU_OK: "ok", GPU_THROTTLED: "throttled", GPU_DOWN: "down", GPU_OFF: "powered off"}


def uplink_stats(
    state: SiteTables, snap: Snapshot, downlinks: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per switch: uplinks installed, uplinks down, mean utilisation of its up uplinks (NaN if none).

    ``downlinks=True`` gives the same for the links from the tier below (cores have no uplinks).
    """
    n = state.n_switches
    end = state.link_b if downlinks else state.link_a
    up = np.asarray(snap.link_up_flag, dtype=bool)
    util = np.where(up & np.isfinite(snap.link_util_frac), snap.link_util_frac, 0.0)
    installed = np.bincount(end, minlength=n)
    n_up = np.bincount(end, up.astype(np.float64), n)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_util = np.where(n_up > 0, np.bincount(end, util, n) / n_up, np.nan)
    return installed, installed - n_up.astype(np.int64), mean_util


def pod_positions(state: SiteTables, tier: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Switches of ``tier`` and their (pod, position in pod); spines use their plane.

    Cores (no pod) are laid out as plane × index within the plane.
    """
    ids = np.flatnonzero(state.switch_tier == tier)
    if tier == TIER_CORE:
        row = state.switch_plane[ids]
    else:
        row = state.switch_pod[ids]
    if tier == TIER_SPINE:
        return ids, row, state.switch_plane[ids]
    order = np.lexsort((ids, row))
    ids, row = ids[order], row[order]
    starts = np.searchsorted(row, row, side="left")
    return ids, row, np.arange(ids.size) - starts


def switch_matrix_figure(
    state: SiteTables, snap: Snapshot, tier: int = TIER_LEAF, selected: int | None = None
) -> go.Figure:
    """Heatmap of mean uplink utilisation (%) per switch of ``tier``; crosses mark links down.

    Rows are pods (core groups for cores), columns the position in the pod (the plane
    for spines).  Each cell's ``customdata`` carries the switch id for drill-down.
    """
    ids, row, col = pod_positions(state, tier)
    links = "downlink" if tier == TIER_CORE else "uplink"
    installed, down, mean_util = uplink_stats(state, snap, downlinks=tier == TIER_CORE)
    n_rows = int(row.max()) + 1 if ids.size else 0
    n_cols = int(col.max()) + 1 if ids.size else 0
    z = np.full((n_rows, n_cols), np.nan)
    sid = np.full((n_rows, n_cols), -1, dtype=np.int64)
    dn = np.zeros((n_rows, n_cols), dtype=np.int64)
    z[row, col] = np.round(mean_util[ids] * 100, 1)
    sid[row, col] = ids
    dn[row, col] = down[ids]
    names = np.full((n_rows, n_cols), "", dtype=object)
    names[row, col] = [state.switch_name[s] for s in ids]
    row_label = "core group" if tier == TIER_CORE else "pod"
    fig = go.Figure(
        dict(
            type="heatmap",
            z=z,
            customdata=sid,
            text=names,
            xgap=1,
            ygap=1,
            colorscale=LOAD_COLOURSCALE,
            zmin=0,
            zmax=LOAD_SCALE_MAX_FRAC * 100,
            colorbar=dict(title=dict(text=f"mean {links} util (%)", side="right"), ticksuffix=" %", thickness=10),
            hovertemplate="%{text}<br>mean " + links + " util %{z:.0f} %<extra></extra>",
            hoverongaps=False,
        )
    )
    rr, cc = np.nonzero(dn > 0)
    fig.add_trace(  # always present (possibly empty) so live patches keep trace indices
        dict(
            type="scatter",
            x=cc,
            y=rr,
            mode="markers",
            name=f"{links}s down",
            marker=dict(symbol="x-thin", size=9, line=dict(width=2, color=theme.STATUS_CRITICAL)),
            customdata=np.stack([sid[rr, cc], dn[rr, cc]], axis=1).astype(object) if rr.size else None,
            text=names[rr, cc] if rr.size else None,
            hovertemplate="%{text}: %{customdata[1]} " + links + "s down<extra></extra>",
        )
    )
    if selected is not None and selected in set(ids.tolist()):
        k = int(np.flatnonzero(ids == selected)[0])
        fig.add_trace(
            dict(
                type="scatter",
                x=[col[k]],
                y=[row[k]],
                mode="markers",
                name="selected",
                hoverinfo="skip",
                marker=dict(symbol="square-open", size=14, color=theme.TEXT, line=dict(width=2)),
            )
        )
    column_label = "spine plane" if tier == TIER_SPINE else "switch in " + row_label
    fig.update_layout(
        **theme.base_layout(
            title=f"{TIER_NAMES[tier].capitalize()} switches ({ids.size:,}): mean {links} utilisation",
            xaxis=dict(title=column_label, showgrid=False, zeroline=False, constrain="domain"),
            yaxis=dict(title=row_label, showgrid=False, zeroline=False, autorange="reversed"),
            uirevision=f"fabric-matrix-{tier}",
            showlegend=False,
        )
    )
    return fig


def tier_rows(state: SiteTables, snap: Snapshot) -> list[dict]:
    """One row per tier boundary (by the lower switch of each link): links, down, utilisation, live capacity."""
    up = np.asarray(snap.link_up_flag, dtype=bool)
    util = snap.link_util_frac
    lower = state.switch_tier[state.link_a]
    upper = state.switch_tier[state.link_b]
    rows = []
    for a, b in ((TIER_LEAF, TIER_SPINE), (TIER_SPINE, TIER_CORE), (TIER_LEAF, TIER_CORE)):
        m = (lower == a) & (upper == b)
        if not m.any():
            continue
        live_util = util[m & up]
        live_util = live_util[np.isfinite(live_util)]
        rows.append(
            {
                "tier": f"{TIER_NAMES[a]} → {TIER_NAMES[b]}",
                "links": int(m.sum()),
                "links_down": int((m & ~up).sum()),
                "mean_util_pct": round(float(live_util.mean()) * 100, 1) if live_util.size else None,
                "p99_util_pct": round(float(np.quantile(live_util, 0.99)) * 100, 1) if live_util.size else None,
                "live_capacity_tbps": round(float(state.link_gbps[m & up].sum()) / 1e3, 1),
            }
        )
    return rows


def util_histogram(state: SiteTables, snap: Snapshot) -> go.Figure:
    """Link utilisation distribution (pre-binned, %) per tier boundary, links down counted apart."""
    up = np.asarray(snap.link_up_flag, dtype=bool)
    lower = state.switch_tier[state.link_a]
    fig = go.Figure()
    centres = (UTIL_BINS_FRAC[:-1] + UTIL_BINS_FRAC[1:]) / 2 * 100
    for i, tier in enumerate((TIER_LEAF, TIER_SPINE)):
        m = (lower == tier) & up & np.isfinite(snap.link_util_frac)
        if not m.any():
            continue
        counts, _ = np.histogram(np.clip(snap.link_util_frac[m], 0, 1 - 1e-9), bins=UTIL_BINS_FRAC)
        fig.add_trace(
            dict(
                type="bar",
                x=centres,
                y=counts,
                name=f"{TIER_NAMES[tier]} uplinks",
                marker_color=theme.SERIES[i],
                hovertemplate="%{x:.0f} %: %{y:,} links<extra>" + TIER_NAMES[tier] + "</extra>",
            )
        )
    fig.update_layout(
        **theme.base_layout(
            title=f"Link utilisation of links up ({int((~up).sum()):,} links down)",
            xaxis=dict(title="utilisation (%)", ticksuffix=" %", range=[0, 100]),
            yaxis=dict(title="links (count)"),
            barmode="group",
            uirevision="fabric-util",
            margin=dict(l=64, r=16, t=84, b=48),
        )
    )
    return fig


def switch_detail_figure(state: SiteTables, snap: Snapshot, switch: int) -> go.Figure:
    """One switch: utilisation of each uplink (bars, crosses for down) and its downlinks.

    For a leaf the downlinks are GPU NIC ports, coloured by GPU state; for a spine or
    core they are the links from the tier below, coloured by utilisation.
    """
    up_idx = np.flatnonzero(state.link_a == switch)
    down_idx = np.flatnonzero(state.link_b == switch)
    layout = stacked_layout(
        f"uplinks ({up_idx.size})",
        "NIC ports (GPUs)" if state.switch_tier[switch] == TIER_LEAF else f"downlinks ({down_idx.size})",
        gap_frac=0.22,
    )
    fig = go.Figure(layout=layout)
    _link_bars(fig, state, snap, up_idx, "b", row=1)
    if state.switch_tier[switch] == TIER_LEAF:
        gpus = np.flatnonzero(state.gpu_leaf == switch)
        node_names = [state.node_name[state.gpu_node[g]] for g in gpus]
        states = snap.gpu_state[gpus]
        fig.add_trace(
            dict(
                type="bar",
                x=[f"{n}/{state.gpu_index[g]}" for n, g in zip(node_names, gpus)],
                y=[1] * gpus.size,
                marker_color=[GPU_STATE_COLOUR.get(int(s), theme.STATUS_UNKNOWN) for s in states],
                customdata=np.array(
                    [
                        [state.rack_name[state.gpu_rack[g]], GPU_STATE_NAME.get(int(s), "unknown")]
                        for g, s in zip(gpus, states)
                    ],
                    dtype=object,
                ).reshape(-1, 2),
                hovertemplate="%{x} in %{customdata[0]}: %{customdata[1]}<br>NIC "
                + f"{state.nic_gbps:.0f} Gbit/s<extra></extra>",
                showlegend=False,
                xaxis="x2",
                yaxis="y2",
            )
        )
        fig.update_layout(
            yaxis2=dict(visible=False),
            xaxis2=dict(
                showticklabels=gpus.size <= 16,
                title_text=f"{gpus.size} GPUs · green ok, amber throttled, red down, grey off",
            ),
        )
    else:
        _link_bars(fig, state, snap, down_idx, "a", row=2)
    fig.update_layout(
        **theme.base_layout(
            title=f"{state.switch_name[switch]} ({TIER_NAMES[int(state.switch_tier[switch])]})",
            uirevision=f"fabric-switch-{switch}",
            bargap=0.1,
            margin=dict(l=56, r=16, t=56, b=40),
        )
    )
    return fig


def _link_bars(fig: go.Figure, state: SiteTables, snap: Snapshot, links: np.ndarray, far_end: str, row: int) -> None:
    """Bars of link utilisation (%) named by the far-end switch; down links drawn full height in the critical colour."""
    far = state.link_b[links] if far_end == "b" else state.link_a[links]
    up = np.asarray(snap.link_up_flag, dtype=bool)[links]
    util_pct = np.where(up, np.nan_to_num(snap.link_util_frac[links]) * 100, 100.0)
    labels = [f"{state.switch_name[s]} #{i}" for i, s in enumerate(far)]
    colours = np.where(up, theme.SERIES[0], theme.STATUS_CRITICAL)
    axis = "" if row == 1 else str(row)
    fig.add_trace(
        dict(
            type="bar",
            x=labels,
            y=np.round(util_pct, 1),
            marker_color=colours,
            showlegend=False,
            customdata=np.where(up, "up", "DOWN"),
            xaxis=f"x{axis}",
            yaxis=f"y{axis}",
            hovertemplate="%{x}: %{customdata}, %{y:.0f} % utilised<extra></extra>",
        )
    )
    fig.update_layout(
        {
            f"yaxis{axis}": dict(title_text="util (%)", range=[0, 100], ticksuffix=" %"),
            f"xaxis{axis}": dict(showticklabels=links.size <= 16, title_text=f"{int((~up).sum())} down (red)"),
        }
    )


def job_bandwidth(state: SiteTables, snap: Snapshot, job: JobStatus) -> dict:
    """Per-GPU network bandwidth the job's rings get (Gbit/s) and what limits it.

    Assumption: inter-node collectives run one ring per rail (GPU index), the NCCL
    default on rail-optimised fabrics, so each rail's GPUs form one collective group.
    """
    ids = np.asarray(job.gpu_ids, dtype=np.int64)
    if ids.size == 0:
        return {"per_gpu_gbps": math.nan, "factor_frac": math.nan, "limiting_tier": "none", "worst": ""}
    report = job_fabric_report(state, ids, state.gpu_index[ids], link_up_flag=np.asarray(snap.link_up_flag, dtype=bool))
    worst = ""
    if report.worst_leaf >= 0 and report.limiting_tier in ("leaf", "disconnected"):
        worst = state.switch_name[report.worst_leaf]
    elif report.worst_pod >= 0:
        worst = f"pod {report.worst_pod}"
    return {
        "per_gpu_gbps": report.factor_frac * state.nic_gbps,
        "nic_gbps": state.nic_gbps,
        "factor_frac": report.factor_frac,
        "limiting_tier": report.limiting_tier,
        "worst": worst,
        "worst_leaf": report.worst_leaf,
    }
