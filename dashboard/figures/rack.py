"""Figures of one rack's drill-down: elevation, per-GPU grids and recent GPU history."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.theme import SCALE_GOOD, SCALE_HOT, STATUS_UNKNOWN, base_layout


def elevation_figure(node_rows: list[dict], cdu_label: str, cdu_in_rack: bool, temp_range_c: tuple[float, float]) -> go.Figure:
    """The rack seen from the front: nodes by slot coloured by their hottest GPU, the CDU at the bottom."""
    rows = sorted(node_rows, key=lambda r: r["slot"])
    labels = [f"slot {r['slot']}" for r in rows]
    temps = [r["max_gpu_temp_c"] for r in rows]
    text = [
        f"{r['name']} · {r['max_gpu_temp_c']:.1f} °C · {r['gpu_power_kw']:.1f} kW"
        + (f" · {r['gpus_throttled']} throttled" if r["gpus_throttled"] else "")
        + (f" · {r['gpus_down']} down" if r["gpus_down"] else "")
        for r in rows
    ]
    fig = go.Figure(
        go.Bar(
            x=[1.0] * len(rows), y=labels, orientation="h", text=text, textposition="inside", insidetextanchor="start",
            marker=dict(color=temps, colorscale=SCALE_HOT, cmin=temp_range_c[0], cmax=temp_range_c[1],
                        colorbar=dict(title=dict(text="max GPU<br>[°C]"), thickness=10), line=dict(width=1, color="#0b1016")),
            hovertemplate="%{text}<extra></extra>", textfont=dict(color="#ffffff"), name="nodes",
        )
    )
    if cdu_in_rack:
        fig.add_trace(go.Bar(x=[1.0], y=["CDU"], orientation="h", text=[cdu_label], textposition="inside",
                             insidetextanchor="start", marker=dict(color=STATUS_UNKNOWN), hovertemplate="%{text}<extra></extra>", name="CDU"))
    order = (["CDU"] if cdu_in_rack else []) + labels
    fig.update_layout(**base_layout(
        title=dict(text="Elevation (front, slot 0 at the bottom)"), height=max(220, 34 * len(order) + 70), showlegend=False,
        bargap=0.08, margin=dict(l=64, r=8, t=36, b=16), uirevision="rack-elevation",
    ))
    fig.update_xaxes(visible=False, range=[0, 1])
    fig.update_yaxes(categoryorder="array", categoryarray=order, title_text="")
    return fig


def gpu_grid_figure(
    grid: np.ndarray, node_labels: list[str], title: str, unit: str, colour_range: tuple[float, float],
    decimals: int = 0, higher_is_better: bool = False, annotations: np.ndarray | None = None, show_values: bool = True,
) -> go.Figure:
    """Node × GPU-index heatmap of one per-GPU quantity, values written in the cells (``show_values``)."""
    text = [[("" if not np.isfinite(v) or not show_values else f"{v:.{decimals}f}") for v in row] for row in grid]
    if annotations is not None:
        text = [[t + (f"<br>{a}" if a else "") for t, a in zip(trow, arow)] for trow, arow in zip(text, annotations)]
    fig = go.Figure(
        go.Heatmap(
            z=np.where(np.isfinite(grid), grid, None).tolist(), x=[str(i) for i in range(grid.shape[1])], y=node_labels,
            text=text, texttemplate="%{text}", textfont=dict(size=11),
            colorscale=SCALE_GOOD if higher_is_better else SCALE_HOT, zmin=colour_range[0], zmax=colour_range[1],
            colorbar=dict(title=dict(text=f"[{unit}]"), thickness=10), xgap=2, ygap=2,
            hovertemplate=f"%{{y}} GPU %{{x}}: %{{z:.{decimals}f}} {unit}<extra></extra>",
        )
    )
    fig.update_layout(**base_layout(
        title=dict(text=f"{title} [{unit}]"), height=max(220, 30 * len(node_labels) + 80),
        margin=dict(l=120, r=8, t=36, b=44), uirevision=f"rack-grid-{title}",
    ))
    fig.update_yaxes(autorange="reversed", title_text="")
    fig.update_xaxes(side="bottom", title_text="GPU index on the node", type="category", tickangle=0)
    return fig


def rack_history_figure(history: pd.DataFrame, metric: str, label: str, unit: str) -> go.Figure:
    """Max and mean over the rack's GPUs of ``metric`` over time (long ts/gpu/metric/value frame)."""
    fig = go.Figure()
    if not history.empty:
        frame = history[history["metric"] == metric]
        by_ts = frame.groupby("ts")["value"].agg(["max", "mean", "min"])
        x = pd.DatetimeIndex(by_ts.index).strftime("%Y-%m-%d %H:%M:%S")
        for column, name, dash in (("max", "max", "solid"), ("mean", "mean", "dot"), ("min", "min", "dash")):
            fig.add_trace(go.Scatter(x=list(x), y=by_ts[column].round(2).tolist(), name=name, mode="lines",
                                     line=dict(dash=dash, width=2), hovertemplate=f"{name}: %{{y:.1f}} {unit}<extra></extra>"))
    fig.update_layout(**base_layout(
        title=dict(text=f"{label} over the rack's GPUs", y=0.98, yanchor="top"), height=240, hovermode="x unified",
        margin=dict(l=60, r=8, t=58, b=40), uirevision=f"rack-history-{metric}",
        legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom"),
    ))
    fig.update_xaxes(title_text="time (UTC)", nticks=6)
    fig.update_yaxes(title_text=f"{label} [{unit}]")
    return fig
