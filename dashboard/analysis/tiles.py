"""The overview's KPI tiles: steady numbers, colours from impact, shares of the live fleet.

Each tile shows the mean of its quantity over the last :data:`STAT_WINDOW_S` seconds with
the band it moved in and a text sparkline (a training swing moves IT load by tens of MW
within a step; the latest tick alone flips every refresh).  Its colour comes from what
the number means for the site: a running job at 0 tokens/s is critical, N-1 is not OK
while a feed is dead, headroom is judged against the training swing.  GPU shares are of
the live fleet (powered-off GPUs excluded), with the fleet total alongside.  "GPUs running"
counts the GPUs running a job: those the fleet model (or, without one, the placed jobs) has
allocated, less those down or powered off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from dashboard.analysis.aggregates import gpu_counts, gpus_running, jobs_summary, n1_status
from dashboard.present.formatting import fmt, fmt_pct, fmt_si
from dashboard.present.stat_window import STAT_WINDOW_S, WindowStat, window_stat
from dashboard.shell.status import alert_counts
from twin.engine.snapshot import Snapshot
from twin.site.tables import SiteTables

SPARK_CHARS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 16

# (name, label, unit) of the tiles, in display order.
TILES = (
    ("it_power", "IT load", "MW"),
    ("facility_power", "Facility load", "MW"),
    ("supply_headroom", "Supply headroom", "MW"),
    ("pue", "PUE", ""),
    ("n1", "Power N-1", ""),
    ("gpus_ok", "GPUs running", "GPUs"),
    ("gpus_throttled", "GPUs throttled", "GPUs"),
    ("gpus_down", "GPUs down", "GPUs"),
    ("tokens", "Throughput", "tokens/s"),
    ("goodput", "Goodput", "tokens/s"),
    ("mfu", "MFU", "%"),
    ("alerts", "Open alerts", "alerts"),
)


# Tiles showing the mean over the last STAT_WINDOW_S seconds; every other tile is the latest tick's value.
WINDOWED = frozenset({"it_power", "facility_power", "supply_headroom", "pue", "tokens"})


def tile_basis(name: str) -> str:
    """How tile ``name`` is computed, shown beside its label: "30 s mean" or "now"."""
    return f"{STAT_WINDOW_S:.0f} s mean" if name in WINDOWED else "now"


@dataclass(frozen=True)
class Tile:
    """What one tile shows: value text, a note under it, a status class, a sparkline and its basis."""

    value: str
    note: str
    status: str = ""  # ok | warning | critical | ""
    spark: str = ""
    basis: str = ""  # "30 s mean" or "now" (:func:`tile_basis`)


def sparkline(samples: tuple[float, ...], width: int = SPARK_WIDTH) -> str:
    """Samples as a row of block characters scaled to their own min–max (empty without samples)."""
    values = np.asarray(samples, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size < 2:
        return ""
    if values.size > width:
        values = np.array([chunk.mean() for chunk in np.array_split(values, width)])
    low, high = values.min(), values.max()
    if high - low <= 1e-12 * max(abs(high), 1.0):
        return SPARK_CHARS[3] * values.size
    levels = np.round((values - low) / (high - low) * (len(SPARK_CHARS) - 1)).astype(int)
    return "".join(SPARK_CHARS[i] for i in levels)


def _band(stat: WindowStat, digits: int) -> str:
    if not stat.samples or stat.steady:
        return ""
    return f"{fmt(stat.low, digits)}–{fmt(stat.high, digits)} over {STAT_WINDOW_S:.0f} s"


def _headroom_series(trend: pd.DataFrame) -> pd.DataFrame:
    if trend is None or trend.empty or "generation_capacity_mw" not in trend:
        return pd.DataFrame()
    return pd.DataFrame({"headroom_mw": trend["generation_capacity_mw"] - trend["facility_power_mw"]})


def overview_tiles(
    state: SiteTables,
    snapshot: Snapshot | None,
    detail,
    trend: pd.DataFrame,
    alerts: list[dict],
    gpu_job: np.ndarray | None = None,
) -> dict[str, Tile]:
    """Every tile of the overview (see module docstring); ``detail`` may be None.

    ``gpu_job``: the fleet's job per GPU (-1 free) when a fleet runs beside the tick; "GPUs
    running" counts the GPUs running a job (:func:`gpus_running`), the placed jobs' without it.
    """
    if snapshot is None:
        return {name: Tile("–", "no data") for name, _, _ in TILES}
    gpus = gpu_counts(snapshot)
    running, allocated = gpus_running(snapshot, gpu_job)
    jobs = jobs_summary(snapshot)
    counts = alert_counts(alerts)
    open_rules = {str(a.get("key", "")).split(":", 1)[0] for a in alerts if a.get("cleared_at") is None}
    live_gpus = max(state.n_gpus - gpus["off"], 0)
    stat = lambda column, latest: window_stat(trend, column, latest=latest)  # noqa: E731

    it = stat("it_power_mw", snapshot.it_power_mw)
    facility = stat("facility_power_mw", snapshot.facility_power_mw)
    headroom = window_stat(
        _headroom_series(trend), "headroom_mw", latest=snapshot.generation_capacity_mw - snapshot.facility_power_mw
    )
    pue = stat("pue_ratio", snapshot.pue_ratio)
    tokens = stat("tokens_per_s", jobs["tokens_per_s"])
    half_swing = snapshot.swing_amplitude_mw / 2.0 if math.isfinite(snapshot.swing_amplitude_mw) else 0.0
    low_headroom = headroom.low if headroom.samples else headroom.mean
    headroom_status = (
        "critical"
        if low_headroom < 0 or low_headroom < half_swing
        else "warning"
        if low_headroom < snapshot.swing_amplitude_mw
        else "ok"
    )

    n1 = n1_status(state, snapshot)
    dead = int(np.count_nonzero(~np.asarray(detail.power_live, dtype=bool))) if detail is not None else 0
    if dead:
        n1_tile = Tile("LOST", f"{dead} power element{'s' if dead != 1 else ''} dead: racks on one feed", "critical")
    elif "no_redundancy" in open_rules:
        n1_tile = Tile("LOST", "elements without redundancy", "critical")
    elif n1["ok"]:
        n1_tile = Tile("OK", f"worst {n1['worst_name']} {fmt_pct(n1['worst_frac'])} % after a failure", "ok")
    else:
        n1_tile = Tile(
            f"{len(n1['elements_over'])} over", f"worst {n1['worst_name']} {fmt_pct(n1['worst_frac'])} %", "critical"
        )

    stalled = [j for j in snapshot.jobs if not (math.isfinite(j.tokens_per_s) and j.tokens_per_s > 0)]
    slowed = "job_slowed" in open_rules
    tokens_status = "critical" if stalled else "warning" if slowed else ("ok" if snapshot.jobs else "")
    tokens_note = (
        f"{len(stalled)} of {len(snapshot.jobs)} job(s) stalled"
        if stalled
        else _band(tokens, 0) or f"{jobs['jobs']} job(s)"
    )
    share = lambda n: f"{fmt_pct(n / live_gpus, 2)} % of {live_gpus:,} live" if live_gpus else "no live GPUs"  # noqa: E731
    off_note = f"{gpus['off']:,} off" if gpus["off"] else f"{live_gpus:,} live"  # short: the tile's one line
    tiles = {
        "it_power": Tile(
            fmt(it.mean, 1),
            _band(it, 1) or f"cooling {fmt(snapshot.cooling_power_mw, 1)} MW",
            "",
            sparkline(it.samples),
        ),
        "facility_power": Tile(
            fmt(facility.mean, 1),
            f"of {fmt(snapshot.generation_capacity_mw, 1)} MW supply",
            "",
            sparkline(facility.samples),
        ),
        "supply_headroom": Tile(
            fmt(headroom.mean, 1),
            f"low {fmt(low_headroom, 1)} · swing ±{fmt(half_swing, 1)} MW",
            headroom_status,
            sparkline(headroom.samples),
        ),
        "pue": Tile(fmt(pue.mean, 2), f"wet bulb {fmt(snapshot.outdoor_wet_bulb_c, 1)} °C", "", sparkline(pue.samples)),
        "n1": n1_tile,
        "gpus_ok": Tile(
            f"{running:,}",
            f"of {allocated:,} allocated · {off_note}",
            "ok" if running == allocated else "warning",
        ),
        "gpus_throttled": Tile(
            f"{gpus['throttled']:,}", share(gpus["throttled"]), "warning" if gpus["throttled"] else "ok"
        ),
        "gpus_down": Tile(f"{gpus['down']:,}", share(gpus["down"]), "critical" if gpus["down"] else "ok"),
        "tokens": Tile(fmt_si(tokens.mean), tokens_note, tokens_status, sparkline(tokens.samples)),
        "goodput": Tile(
            fmt_si(jobs["goodput_tokens_per_s"]), "after restarts and checkpoints", "critical" if stalled else ""
        ),
        "mfu": Tile(fmt_pct(jobs["mfu_frac"], 1), "GPU-weighted", "critical" if stalled else ""),
        "alerts": Tile(
            f"{counts['open']}",
            f"{counts['critical']} critical · {counts['need_attention']} need attention",
            "critical" if counts["critical"] else "warning" if counts["warning"] else "ok",
        ),
    }
    return {name: replace(tile, basis=tile_basis(name)) for name, tile in tiles.items()}


def power_breakdown(snapshot: Snapshot | None, detail) -> str:
    """``facility = IT + network + losses + cooling + site`` of the latest tick, in MW (empty without detail).

    It says "now": the load tiles above are means over :data:`STAT_WINDOW_S`, which the training
    swing moves the latest tick away from."""
    if snapshot is None or detail is None:
        return ""
    b = detail.balance
    parts = [
        ("IT", b.it_mw),
        ("network", b.network_mw),
        ("distribution losses", b.distribution_loss_mw),
        ("cooling", b.cooling_mw),
        ("site", b.overhead_mw),
    ]
    total = sum(v for _, v in parts)
    text = f"Now: facility {fmt(b.facility_mw, 1)} MW = " + " + ".join(f"{name} {fmt(v, 1)}" for name, v in parts)
    if abs(total - b.facility_mw) > 0.005 * max(b.facility_mw, 1e-6):
        text += f" (parts sum to {fmt(total, 1)} MW)"
    return text + f" · at {snapshot.ts:%H:%M:%S} UTC (tiles marked {tile_basis('it_power')!r} average the swing)"
