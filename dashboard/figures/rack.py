"""Figures of one rack's drill-down: recent GPU history (the elevation and GPU grids are HTML views)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.present.theme import base_layout


def rack_history_figure(history: pd.DataFrame, metric: str, label: str, unit: str) -> go.Figure:
    """Max and mean over the rack's GPUs of ``metric`` over time (long ts/gpu/metric/value frame)."""
    fig = go.Figure()
    if not history.empty:
        frame = history[history["metric"] == metric]
        by_ts = frame.groupby("ts")["value"].agg(["max", "mean", "min"])
        x = pd.DatetimeIndex(by_ts.index).strftime("%Y-%m-%d %H:%M:%S")
        for column, name, dash in (("max", "max", "solid"), ("mean", "mean", "dot"), ("min", "min", "dash")):
            fig.add_trace(
                go.Scatter(
                    x=list(x),
                    y=by_ts[column].round(2).tolist(),
                    name=name,
                    mode="lines",
                    line=dict(dash=dash, width=2),
                    hovertemplate=f"{name}: %{{y:.1f}} {unit}<extra></extra>",
                )
            )
    fig.update_layout(
        **base_layout(
            title=dict(text=f"{label} over the rack's GPUs", y=0.98, yanchor="top"),
            height=240,
            hovermode="x unified",
            margin=dict(l=60, r=8, t=58, b=40),
            uirevision=f"rack-history-{metric}",
            legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom"),
        )
    )
    fig.update_xaxes(title_text="time (UTC)", nticks=6)
    fig.update_yaxes(title_text=f"{label} [{unit}]")
    return fig
