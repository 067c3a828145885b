"""Time-series figures of site trends (power, PUE, GPU health, throughput) and their live patches."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from dash import Patch

from dashboard.present.theme import base_layout

# drawn height of a trend chart [px]; its graph box is given the same height, so a responsive plot
# never sizes itself to a container that has no height yet (it collapsed to 24 px now and then)
TREND_HEIGHT_PX = 230

MAX_POINTS = 180  # per series: plenty for a 400-px-wide chart, small on the wire
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # UTC wall clock; shorter on the wire than ISO with offset


def downsample(frame: pd.DataFrame, max_points: int = MAX_POINTS) -> pd.DataFrame:
    """Bucket ``frame`` in time so it has at most about ``max_points`` rows.

    Columns named ``max_*`` and ``gpus_*`` keep the bucket maximum (a spike must stay
    visible); the others the mean.
    """
    if len(frame) <= max_points or not isinstance(frame.index, pd.DatetimeIndex):
        return frame
    span_s = (frame.index[-1] - frame.index[0]).total_seconds()
    bucket_s = max(1, int(-(-span_s // max_points)))
    how = {c: ("max" if c.startswith(("max_", "gpus_")) else "mean") for c in frame.columns}
    return frame.resample(f"{bucket_s}s").agg(how).dropna(how="all")


def _xy(frame: pd.DataFrame, column: str) -> tuple[list[str], list]:
    """Wire-friendly x (UTC strings) and y (rounded, None for NaN) of one column."""
    if column not in frame or frame.empty:
        return [], []
    values = frame[column].astype(float).round(4)
    x = list(frame.index.strftime(TIME_FORMAT)) if isinstance(frame.index, pd.DatetimeIndex) else list(frame.index)
    return x, [None if v != v else v for v in values.tolist()]


def trend_figure(
    frame: pd.DataFrame,
    series: list[tuple[str, str]],
    y_title: str,
    unit: str,
    title: str,
    uirevision: str,
    dashed: tuple[str, ...] = (),
    from_zero: bool = False,
    height_px: int = TREND_HEIGHT_PX,
    pinned: str | None = None,
) -> go.Figure:
    """One line per ``(column, label)`` of ``frame`` (index = UTC time); ``dashed`` columns dotted.

    The y axis reads ``"<y_title> [<unit>]"``; hover shows values with the unit.
    ``pinned`` (a UTC time string) draws a marker line at that instant.
    """
    frame = downsample(frame)
    fig = go.Figure()
    for column, label in series:
        x, y = _xy(frame, column)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                name=label,
                mode="lines",
                line=dict(width=2, dash="dot" if column in dashed else "solid"),
                hovertemplate=f"{label}: %{{y:,.4~g}} {unit}<extra></extra>",
            )
        )
    fig.update_layout(
        **base_layout(
            title=dict(text=title, y=0.98, yanchor="top"),
            height=height_px,
            uirevision=uirevision,
            hovermode="x unified",
            margin=dict(l=60, r=12, t=58, b=40),
            showlegend=len(series) > 1,
            legend=dict(
                orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom", font=dict(size=11), itemwidth=30
            ),
        )
    )
    fig.update_xaxes(title_text="time (UTC)", title_standoff=2, nticks=6, ticklabeloverflow="hide past domain")
    fig.update_layout(shapes=pin_shapes(pinned))
    fig.update_yaxes(title_text=f"{y_title} [{unit}]", rangemode="tozero" if from_zero else "normal", nticks=6)
    return fig


def pin_shapes(pinned: str | None) -> list[dict]:
    """A dashed vertical line at the pinned time (none without a pin)."""
    if not pinned:
        return []
    return [
        dict(
            type="line",
            xref="x",
            yref="paper",
            x0=pinned,
            x1=pinned,
            y0=0,
            y1=1,
            line=dict(color="#f0e442", width=2, dash="dash"),
        )
    ]


def pin_patch(pinned: str | None) -> Patch:
    """Patch moving (or removing) the pinned-time line, leaving data and zoom alone."""
    patch = Patch()
    patch["layout"]["shapes"] = pin_shapes(pinned)
    return patch


def trend_patch(frame: pd.DataFrame, columns: list[str]) -> Patch:
    """A Patch replacing the x/y of each trace (same order as ``columns``), keeping zoom and layout."""
    frame = downsample(frame)
    patch = Patch()
    for i, column in enumerate(columns):
        x, y = _xy(frame, column)
        patch["data"][i]["x"] = x
        patch["data"][i]["y"] = y
    return patch
