"""Jobs-page figures: where a job runs on the floor, its step-time breakdown, bottleneck racks.

Pure functions of a :class:`~twin.site.tables.SiteTables`, a :class:`~twin.engine.snapshot.Snapshot`
and one of its :class:`~twin.engine.snapshot.JobStatus`.  The floor map is one marker per rack
(1,568 at colossus scale), coloured by how many of the rack's GPUs the job uses.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from dashboard.present import theme
from twin.engine.snapshot import JobStatus, Snapshot
from twin.site.tables import SiteTables

# Display order and colour of step-time components; unknown keys follow in their own order.
BREAKDOWN_ORDER = ("compute", "tp", "cp", "ep", "pp", "dp", "exposed_comm", "bubble", "throttle", "straggler")
BREAKDOWN_COLOURS = (
    "#0072b2",
    "#56b4e9",
    "#009e73",
    "#f0e442",
    "#cc79a7",
    "#e69f00",
    "#8fa0b3",
    "#7f8c99",
    "#d55e00",
    "#d55e00",
)


def component_label(key: str) -> str:
    """Readable name of a breakdown key: ``dp_comm_s`` → ``dp comm``, ``throttle_loss_s`` → ``throttle loss``."""
    name = key[:-2] if key.endswith("_s") else key
    return name.replace("_", " ")


def _component_rank(key: str) -> tuple[int, str]:
    base = key[:-2] if key.endswith("_s") else key
    for i, prefix in enumerate(BREAKDOWN_ORDER):
        if base == prefix or base.startswith(prefix + "_"):
            return i, base
    return len(BREAKDOWN_ORDER), base


def breakdown_figure(jobs: list[JobStatus]) -> go.Figure:
    """Stacked horizontal bar of each job's step time (s) by component."""
    keys = sorted({k for job in jobs for k in job.breakdown_s}, key=_component_rank)
    fig = go.Figure()
    names = [job.name for job in jobs]
    for i, key in enumerate(keys):
        rank, _ = _component_rank(key)
        colour = BREAKDOWN_COLOURS[rank] if rank < len(BREAKDOWN_COLOURS) else theme.SERIES[i % len(theme.SERIES)]
        values = [float(job.breakdown_s.get(key, 0.0)) for job in jobs]
        shares = [v / job.step_time_s if job.step_time_s > 0 else math.nan for v, job in zip(values, jobs)]
        fig.add_trace(
            dict(
                type="bar",
                y=names,
                x=values,
                orientation="h",
                name=component_label(key),
                marker_color=colour,
                customdata=shares,
                text=[
                    f"{v:.2f} s" if job.step_time_s > 0 and v / job.step_time_s >= 0.06 else ""
                    for v, job in zip(values, jobs)
                ],
                textposition="inside",
                insidetextanchor="middle",
                hovertemplate="%{y}<br>"
                + component_label(key)
                + ": %{x:.3f} s (%{customdata:.0%} of the step)<extra></extra>",
            )
        )
    stalled = [job.name for job in jobs if not math.isfinite(job.step_time_s) or job.step_time_s <= 0]
    notes = (
        [
            dict(
                text=f"{', '.join(stalled)}: stalled, no step completes",
                x=0.5,
                y=0.5,
                xref="paper",
                yref="paper",
                showarrow=False,
                font=dict(size=14, color=theme.STATUS_CRITICAL),
            )
        ]
        if stalled
        else []
    )
    fig.update_layout(
        **theme.base_layout(
            title=None,
            annotations=notes,
            barmode="stack",
            xaxis=dict(title="seconds per step (s)", rangemode="tozero"),
            yaxis=dict(autorange="reversed", automargin=True),
            uirevision="jobs-breakdown",
            height=max(220, 110 + 48 * len(jobs)),
            legend=dict(traceorder="normal"),
            margin=dict(l=56, r=16, t=64, b=40),
        )
    )
    return fig


def job_rack_gpus(state: SiteTables, job: JobStatus) -> np.ndarray:
    """Number of the job's GPUs in each rack."""
    return np.bincount(state.gpu_rack[np.asarray(job.gpu_ids, dtype=np.int64)], minlength=state.n_racks)


def placement_key(state: SiteTables, job: JobStatus) -> str:
    """Fingerprint of where the job runs: equal keys mean the same racks and GPU counts."""
    per_rack = job_rack_gpus(state, job)
    return f"{job.name}:{hash(per_rack.tobytes()) & 0xFFFFFFFF:08x}"


def placement_figure(state: SiteTables, snap: Snapshot, job: JobStatus, selected_rack: int | None = None) -> go.Figure:
    """Floor map (m): racks of the job coloured by its GPU count, bottleneck racks ringed.

    Racks without the job are drawn dim.  ``customdata`` is the rack id for click-through.
    """
    per_rack = job_rack_gpus(state, job)
    gpus_per_rack = np.bincount(state.gpu_rack, minlength=state.n_racks)
    used = per_rack > 0
    x, y = np.round(state.rack_x_m, 2), np.round(state.rack_y_m, 2)
    fig = go.Figure()
    fig.add_trace(
        dict(
            type="scatter",
            x=x[~used],
            y=y[~used],
            mode="markers",
            name="other racks",
            hoverinfo="skip",
            marker=dict(symbol="square", size=7, color=theme.GRID),
        )
    )
    idx = np.flatnonzero(used)
    fig.add_trace(
        dict(
            type="scatter",
            x=x[idx],
            y=y[idx],
            mode="markers",
            name=f"{job.name} racks",
            marker=dict(
                symbol="square",
                size=7,
                color=per_rack[idx] / np.maximum(gpus_per_rack[idx], 1) * 100,
                colorscale=theme.SCALE_GOOD,
                cmin=0,
                cmax=100,
                colorbar=dict(title=dict(text="rack GPUs in job (%)", side="right"), ticksuffix=" %", thickness=10),
            ),
            customdata=np.stack([idx, per_rack[idx]], axis=1).astype(object),  # plain lists reach clickData
            text=[state.rack_name[r] for r in idx],
            hovertemplate="%{text}: %{customdata[1]} job GPUs<extra></extra>",
        )
    )
    bottleneck = np.asarray(job.bottleneck_racks, dtype=np.int64)
    fig.add_trace(  # always present (possibly empty) so live patches keep trace indices
        dict(
            type="scatter",
            x=x[bottleneck],
            y=y[bottleneck],
            mode="markers",
            name="bottleneck racks",
            marker=dict(symbol="square-open", size=13, color=theme.STATUS_CRITICAL, line=dict(width=2)),
            customdata=np.stack([bottleneck, per_rack[bottleneck]], axis=1).astype(object) if bottleneck.size else None,
            text=[state.rack_name[r] for r in bottleneck],
            hovertemplate="%{text}: bottleneck<extra></extra>",
        )
    )
    if selected_rack is not None and 0 <= selected_rack < state.n_racks:
        fig.add_trace(
            dict(
                type="scatter",
                x=[x[selected_rack]],
                y=[y[selected_rack]],
                mode="markers",
                name="selected",
                hoverinfo="skip",
                marker=dict(symbol="diamond-open", size=16, color=theme.TEXT, line=dict(width=2)),
            )
        )
    fig.update_layout(
        **theme.base_layout(
            title=f"Placement of {job.name}: {int(used.sum()):,} racks, {np.asarray(job.gpu_ids).size:,} GPUs",
            xaxis=dict(
                title="x (m) →", showgrid=False, zeroline=False, scaleanchor="y", scaleratio=1, constrain="domain"
            ),
            yaxis=dict(title="y (m) ↓", showgrid=False, zeroline=False, autorange=theme.MAP_Y_AUTORANGE),
            uirevision=f"jobs-floor-{job.name}",
            hovermode="closest",
            margin=dict(l=56, r=16, t=84, b=40),
        )
    )
    return fig


def bottleneck_rows(state: SiteTables, snap: Snapshot, job: JobStatus) -> list[dict]:
    """The job's bottleneck racks: GPUs in the job, slowest GPU factor, hottest GPU (°C)."""
    ids = np.asarray(job.gpu_ids, dtype=np.int64)
    rows = []
    for r in np.asarray(job.bottleneck_racks, dtype=np.int64):
        in_rack = ids[state.gpu_rack[ids] == r]
        factors = snap.throttle_frac[in_rack]
        rows.append(
            {
                "rack": state.rack_name[r],
                "job_gpus": int(in_rack.size),
                "slowest_pct": round(float(np.nanmin(factors)) * 100, 1) if np.isfinite(factors).any() else None,
                "max_gpu_temp_c": round(float(snap.rack_max_gpu_temp_c[r]), 1)
                if np.isfinite(snap.rack_max_gpu_temp_c[r])
                else None,
                "rack_power_kw": round(float(snap.rack_power_kw[r]), 1),
            }
        )
    return rows


def job_summary(job: JobStatus) -> dict:
    """Headline numbers of a job in display units."""
    return {
        "step_time_s": job.step_time_s,
        "mfu_pct": job.mfu_frac * 100,
        "gpu_model_tflops": job.gpu_model_tflops,
        "tokens_per_s": job.tokens_per_s,
        "goodput_tokens_per_s": job.goodput_tokens_per_s,
        "ettr_pct": job.ettr_frac * 100,
        "checkpoint_interval_min": job.checkpoint_interval_s / 60,
        "drain_gain_pct": job.drain_gain_frac * 100,
        "gpus": int(np.asarray(job.gpu_ids).size),
    }
