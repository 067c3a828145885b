"""Fleet figures: teams' GPUs over time, free GPUs per node (fragmentation), allocations by pod or hall
(a Gantt chart), node failures by cause.

Pure functions of plain arrays and rows (from :mod:`ingest.live.fleet_frame` and
:class:`ingest.live.fleet.LiveFleet`); times are UTC epoch seconds.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import plotly.graph_objects as go

from dashboard.present import theme

MARGIN = dict(l=60, r=16, t=36, b=40)


def _times(t_s: np.ndarray) -> list[datetime]:
    return [datetime.fromtimestamp(float(t), UTC) for t in np.asarray(t_s).tolist()]


def team_colour(i: int) -> str:
    """Team ``i``'s colour, the same on every page (ten before they repeat)."""
    return theme.CATEGORY[i % len(theme.CATEGORY)]


def team_usage_figure(t_s: np.ndarray, gpus: np.ndarray, teams: list[str], title: str) -> go.Figure:
    """GPUs each team held, stacked, over the sampled times (one trace per team)."""
    fig = go.Figure()
    x = _times(t_s[:: max(1, t_s.size // 600)]) if t_s.size else []
    step = max(1, t_s.size // 600)
    for i, name in enumerate(teams):
        y = gpus[::step, i] if gpus.size else []
        fig.add_trace(
            go.Scatter(
                x=x, y=y, name=name, stackgroup="teams", mode="lines", line=dict(width=0.5, color=team_colour(i))
            )
        )
    fig.update_layout(
        **theme.base_layout(
            title=dict(text=title, x=0.01),
            margin=dict(MARGIN, b=100),
            yaxis=dict(title="GPUs", rangemode="tozero"),
            # below the plot in rows: a column of 8+ teams at the side scrolled inside a 300 px chart
            legend=dict(orientation="h", x=0.0, y=-0.28, yanchor="top", font=dict(size=11)),
            uirevision="fleet-teams",
        )
    )
    return fig


def fragmentation_figure(nodes_by_free_gpus: list[int]) -> go.Figure:
    """Usable nodes by how many of their GPUs are free (0 … GPUs per node)."""
    counts = list(nodes_by_free_gpus)
    full = len(counts) - 1
    colours = [
        theme.STATUS_OK if k == full else theme.STATUS_WARNING if k > 0 else theme.STATUS_UNKNOWN
        for k in range(len(counts))
    ]
    fig = go.Figure(
        go.Bar(
            x=[str(k) for k in range(len(counts))],
            y=counts,
            marker_color=colours,
            text=[f"{c:,}" for c in counts],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y:,} nodes with %{x} free GPUs<extra></extra>",
        )
    )
    fig.update_layout(
        **theme.base_layout(
            title=dict(text="Nodes by free GPUs (amber: partly used, stranding GPUs)", x=0.01),
            margin=MARGIN,
            xaxis=dict(title="free GPUs on the node", type="category"),
            yaxis=dict(title="nodes (log)", type="log", range=[-0.1, np.log10(max(max(counts, default=1), 1)) + 0.4]),
            uirevision="fleet-frag",
        )
    )
    return fig


def gantt_figure(rows: list[dict], lane: str, now_s: float, teams: list[str]) -> go.Figure:
    """One bar per allocation from its start to its end (now while it runs), in lanes by ``lane`` (hall or pod)."""
    lanes = sorted({r[lane] for r in rows}, key=lambda s: (len(s), s))
    fig = go.Figure()
    colour = {t: team_colour(i) for i, t in enumerate(teams)}
    by_team: dict[str, list[dict]] = {}
    for r in rows:
        by_team.setdefault(r["team"], []).append(r)
    for team in sorted(by_team, key=lambda t: teams.index(t) if t in teams else len(teams)):
        rs = by_team[team]
        start = np.array([r["start_s"] for r in rs])
        dur_ms = (np.array([r["end_s"] for r in rs]) - start) * 1e3
        fig.add_trace(
            go.Bar(
                base=_times(start),
                x=dur_ms,
                y=[r[lane] for r in rs],
                orientation="h",
                name=team,
                marker=dict(color=colour.get(team, theme.STATUS_UNKNOWN), line=dict(width=0)),
                customdata=[[r["job_id"], r["n_gpus"]] for r in rs],
                hovertemplate="%{customdata[0]} · %{customdata[1]:,} GPUs<br>%{base|%H:%M} → %{x}<extra>"
                + team
                + "</extra>",
            )
        )
    fig.add_vline(x=datetime.fromtimestamp(now_s, UTC), line=dict(color=theme.TEXT_MUTED, dash="dot", width=1))
    fig.update_layout(
        **theme.base_layout(
            title=dict(text=f"Allocations of jobs ≥ 64 GPUs by {lane}", x=0.01),
            margin=dict(MARGIN, l=80),
            barmode="overlay",
            xaxis=dict(type="date"),
            yaxis=dict(categoryorder="array", categoryarray=lanes, autorange="reversed"),
            legend=dict(orientation="v", x=1.01, y=1.0),
            uirevision=f"fleet-gantt-{lane}",
        )
    )
    return fig


def failures_figure(causes: list[str], counts: list[int], reference_frac: list[float], window: str) -> go.Figure:
    """Node failures in the window by cause, with Llama 3's Table 5 share for comparison."""
    total = max(sum(counts), 1)
    fig = go.Figure(
        [
            go.Bar(
                y=causes,
                x=[100.0 * c / total for c in counts],
                orientation="h",
                name=f"here, {window}",
                marker_color=theme.STATUS_WARNING,
                customdata=counts,
                hovertemplate="%{y}: %{customdata:,} failures (%{x:.1f} %)<extra></extra>",
            ),
            go.Bar(
                y=causes,
                x=[100.0 * f for f in reference_frac],
                orientation="h",
                name="Llama 3, Table 5",
                marker_color=theme.STATUS_UNKNOWN,
                hovertemplate="%{y}: %{x:.1f} % of Llama 3's hardware interruptions<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        **theme.base_layout(
            title=dict(text=f"Node failures by cause, {window} (share of all, %)", x=0.01),
            margin=dict(MARGIN, l=170),
            barmode="group",
            yaxis=dict(autorange="reversed"),
            xaxis=dict(title="% of failures"),
            legend=dict(orientation="h", y=-0.12),
            uirevision="fleet-failures",
        )
    )
    return fig


def topology_figure(occ, title: str) -> go.Figure:
    """Domains of one level (a :class:`dashboard.analysis.fleet_topology.DomainOccupancy`) as a grid: one row
    per pod, one cell per domain, coloured by the share of its GPUs allocated; the cell reads the free GPUs."""
    pods = np.unique(occ.pod) if occ.pod.size else np.zeros(0, int)
    width = int(max((int((occ.pod == p).sum()) for p in pods.tolist()), default=0))
    z = np.full((pods.size, width), np.nan)
    text = np.full((pods.size, width), "", dtype=object)
    hover = np.full((pods.size, width), "", dtype=object)
    free, frac = occ.free_gpus_count, occ.allocated_frac
    for i, p in enumerate(pods.tolist()):
        for k, d in enumerate(np.flatnonzero(occ.pod == p).tolist()):
            z[i, k] = frac[d]
            text[i, k] = f"{int(free[d]):,}" if free[d] else ""
            hover[i, k] = (
                f"{occ.name[d]}<br>{int(occ.allocated_gpus_count[d]):,} of {int(occ.gpus_count[d]):,} GPUs allocated "
                f"to {int(occ.jobs_count[d]):,} job{'s' if occ.jobs_count[d] != 1 else ''}<br>"
                f"{int(free[d]):,} free · {int(occ.out_gpus_count[d]):,} on nodes out of service"
            )
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[str(k + 1) for k in range(width)],
            y=[f"pod {p}" for p in pods.tolist()],
            text=text,
            texttemplate="%{text}",
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            zmin=0.0,
            zmax=1.0,
            colorscale=theme.SCALE_HOT,
            xgap=2,
            ygap=2,
            colorbar=dict(title="allocated", tickformat=".0%", thickness=12),
        )
    )
    fig.update_layout(
        **theme.base_layout(
            title=dict(text=title, x=0.01),
            margin=MARGIN,
            xaxis=dict(title=f"{occ.level} in the pod", type="category", showgrid=False),
            yaxis=dict(autorange="reversed", type="category", showgrid=False),
            uirevision=f"fleet-topology-{occ.level}",
        )
    )
    return fig
