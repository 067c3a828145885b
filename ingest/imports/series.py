"""Canonical readings from an imported recording, and their conversion into an incident bundle.

A *series* is a pandas DataFrame with the columns of :data:`COLUMNS`: ``ts`` (UTC),
``host`` (the recording's hostname), ``gpu`` (GPU index on the host, -1 for node-level
readings), ``metric`` (a canonical name of :data:`METRICS`) and ``value`` (canonical unit).

:func:`series_bundle` maps hosts and GPUs onto a site's dense ids (unknown ones are
reported and skipped), resamples to one frame every ``step_s`` (mean of the readings in
each interval) and fills the bundle tables.  What the recording lacks stays NaN (the
replay then uses the twin's own model), except utilisation, which a node-power-only
recording (MLPerf) implies: GPU utilisation is solved from node input power with the
site's PSU efficiency, node base power and GPU idle/TDP power; throttling from the SM clocks,
and the hot racks' alerts from the temperatures (:mod:`ingest.imports.derived`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from ingest.imports.derived import hot_rack_events, throttle_from_readings
from ingest.replay.bundle import SCHEMAS, Bundle
from ingest.replay.recorder import events_table
from twin.errors import InputError
from twin.physics.power import psu_efficiency_frac
from twin.site.tables import SiteTables

COLUMNS = ("ts", "host", "gpu", "metric", "value")
METRICS = ("gpu_temp_c", "hbm_temp_c", "gpu_power_w", "gpu_util_frac", "sm_clock_mhz", "last_xid_code", "node_power_w")
GPU_METRICS = (
    "gpu_temp_c",
    "hbm_temp_c",
    "gpu_power_w",
    "gpu_util_frac",
    "sm_clock_mhz",
    "throttle_frac",
    "last_xid_code",
)


class RecordingImportError(InputError):
    """A recording cannot be imported (the message names the file and the problem)."""


def empty_series() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ts": pd.Series([], dtype="datetime64[ms, UTC]"),
            "host": pd.Series([], dtype=str),
            "gpu": pd.Series([], dtype=np.int64),
            "metric": pd.Series([], dtype=str),
            "value": pd.Series([], dtype=np.float64),
        }
    )


def make_series(rows: list[tuple]) -> pd.DataFrame:
    """A series from (ts, host, gpu, metric, value) tuples (ts aware datetimes or epoch ms)."""
    if not rows:
        return empty_series()
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df["ts"] = pd.to_datetime(df["ts"], utc=True, unit="ms" if np.issubdtype(df["ts"].dtype, np.number) else None)
    df["gpu"] = df["gpu"].astype(np.int64)
    df["value"] = df["value"].astype(np.float64)
    return df


@dataclass
class Mapped:
    """A series mapped onto a site: ids, frames, and what was skipped."""

    frame_ts: pd.DatetimeIndex
    gpu: dict[str, np.ndarray]  # metric → [n_frames, n_gpus] (NaN where not recorded)
    node_power_w: np.ndarray  # [n_frames, n_nodes]
    skipped: list[str] = field(default_factory=list)


def map_series(
    series: pd.DataFrame, state: SiteTables, step_s: float, host_map: dict[str, str] | None = None
) -> Mapped:
    """Resample ``series`` to ``step_s`` frames on ``state``'s GPUs and nodes (see module docstring)."""
    if series.empty:
        raise RecordingImportError("the recording holds no reading")
    node_of = {name: i for i, name in enumerate(state.node_name)}
    hosts = sorted(series["host"].unique())
    host_node = {}
    skipped = []
    for h in hosts:
        target = (host_map or {}).get(h, h)
        if target in node_of:
            host_node[h] = node_of[target]
        else:
            skipped.append(f"host {h!r}: not a node of site {state.name!r}")
    df = series[series["host"].isin(list(host_node))].copy()
    df["node"] = df["host"].map(host_node).astype(np.int64)
    gpu_key = df["node"].to_numpy() * 64 + df["gpu"].to_numpy()
    site_key = state.gpu_node.astype(np.int64) * 64 + state.gpu_index.astype(np.int64)
    order = np.argsort(site_key)
    pos = np.searchsorted(site_key[order], gpu_key)
    pos = np.minimum(pos, site_key.size - 1)
    found = site_key[order][pos] == gpu_key
    df["gpu_id"] = np.where(found, order[pos], -1)
    bad = df[(df["gpu"] >= 0) & (df["gpu_id"] < 0)][["host", "gpu"]].drop_duplicates()
    skipped += [f"GPU {r.host}/{r.gpu}: the site's node has no such GPU" for r in bad.itertuples()]
    t0 = df["ts"].min().floor(f"{int(step_s * 1000)}ms")
    df["frame"] = ((df["ts"] - t0).dt.total_seconds() // step_s).astype(np.int64)
    n_frames = int(df["frame"].max()) + 1
    frame_ts = pd.DatetimeIndex([t0 + pd.Timedelta(seconds=i * step_s) for i in range(n_frames)])
    gpu = {}
    g = df[(df["gpu"] >= 0) & (df["gpu_id"] >= 0)]
    for metric in GPU_METRICS:
        arr = np.full((n_frames, state.n_gpus), np.nan)
        m = g[g["metric"] == metric]
        if not m.empty:
            means = m.groupby(["frame", "gpu_id"])["value"].mean()
            arr[means.index.get_level_values(0), means.index.get_level_values(1)] = means.to_numpy()
        gpu[metric] = arr
    node_power = np.full((n_frames, state.n_nodes), np.nan)
    m = df[(df["gpu"] < 0) & (df["metric"] == "node_power_w")]
    if not m.empty:
        means = m.groupby(["frame", "node"])["value"].mean()
        node_power[means.index.get_level_values(0), means.index.get_level_values(1)] = means.to_numpy()
    return Mapped(frame_ts, gpu, node_power, skipped)


def util_from_node_power(state: SiteTables, node_power_w: np.ndarray) -> np.ndarray:
    """GPU utilisation [frames, n_gpus] implied by node input power [frames, n_nodes] (NaN where none).

    DC load = input × PSU efficiency (at the load fraction of the node's PSUs); GPUs share
    what exceeds the node's base power, between their idle power and TDP.
    """
    psus = state.node_psus.astype(np.float64) * state.node_psu_rating_w
    eff = psu_efficiency_frac(np.clip(node_power_w / psus, 0.0, 1.0))
    n_gpus = np.bincount(state.gpu_node, minlength=state.n_nodes)
    idle = state.gpu_spec_array("idle_power_w")
    tdp = state.gpu_spec_array("tdp_w")
    gpu_dc = (node_power_w * eff - state.node_base_power_w) / np.maximum(n_gpus, 1)
    util = (gpu_dc[:, state.gpu_node] - idle) / (tdp - idle)
    return np.clip(util, 0.0, 1.0)


def series_bundle(
    series: pd.DataFrame,
    state: SiteTables,
    site_toml: str,
    *,
    name: str,
    title: str,
    origin: str,
    step_s: float,
    host_map: dict[str, str] | None = None,
    site_version: int = 1,
    tags=(),
    notes: str = "",
    events: list[dict] = (),
) -> tuple[Bundle, list[str]]:
    """The incident bundle of an imported series, and the list of skipped entities."""
    m = map_series(series, state, step_s, host_map)
    util = m.gpu["gpu_util_frac"]
    implied = util_from_node_power(state, m.node_power_w)
    gpu = dict(m.gpu, gpu_util_frac=np.where(np.isfinite(util), util, implied))
    gpu["throttle_frac"] = throttle_from_readings(
        state, gpu["gpu_temp_c"], gpu["sm_clock_mhz"], gpu["gpu_util_frac"], gpu["throttle_frac"]
    )
    events = sorted([*events, *hot_rack_events(state, m.frame_ts, gpu["gpu_temp_c"])], key=lambda e: e["ts_ms"])
    recorded = np.isfinite(np.stack([gpu[k] for k in GPU_METRICS])).any(axis=(0, 1))
    gpu_ids = np.flatnonzero(recorded).astype(np.int32)
    frame_ts = m.frame_ts
    meta = {
        "name": name,
        "title": title,
        "site_name": state.name,
        "site_version": site_version,
        "start": frame_ts[0].isoformat(),
        "end": frame_ts[-1].isoformat(),
        "frame_every_s": step_s,
        "tags": list(tags),
        "notes": notes,
        "origin": origin,
        "detail_racks": [state.rack_name[r] for r in np.unique(state.gpu_rack[gpu_ids])],
        "host_map": host_map or {},
        "skipped": m.skipped,
    }
    return Bundle(meta, site_toml, _series_tables(state, m, gpu, gpu_ids, events)), m.skipped


def _series_tables(
    state: SiteTables, m: Mapped, gpu: dict[str, np.ndarray], gpu_ids: np.ndarray, events: list[dict]
) -> dict:
    """The bundle tables of the mapped series ``m`` (``gpu``: its GPU columns, ``gpu_ids`` the GPUs recorded)."""
    n_frames = len(m.frame_ts)
    ts_rep = lambda k: pa.array(
        np.repeat(m.frame_ts.as_unit("ms").tz_localize(None).to_numpy(), k),  # noqa: E731
        type=pa.timestamp("ms", tz="UTC"),
    )
    ids_rep = lambda ids: pa.array(np.tile(np.asarray(ids, dtype=np.int32), n_frames))  # noqa: E731

    def table(name_, ids, columns: dict[str, np.ndarray]) -> pa.Table:
        schema = SCHEMAS[name_]
        arrays = [ts_rep(len(ids)), ids_rep(ids)]
        for f in list(schema)[2:]:
            arrays.append(pa.array(np.asarray(columns[f.name]).reshape(-1).astype(f.type.to_pandas_dtype())))
        return pa.Table.from_arrays(arrays, schema=schema)

    g = {k: (np.nan_to_num(v[:, gpu_ids]) if k == "last_xid_code" else v[:, gpu_ids]) for k, v in gpu.items()}
    nan = lambda k: np.full((n_frames, k), np.nan)  # noqa: E731
    n_cdu, n_loops = state.n_cdus, len(state.loop_name)
    cdu = {
        "coolant_supply_temp_c": nan(n_cdu),
        "coolant_return_temp_c": nan(n_cdu),
        "coolant_flow_lpm": nan(n_cdu),
        "cdu_heat_kw": nan(n_cdu),
        "cdu_capacity_kw": nan(n_cdu),
        "pumps_running_count": np.tile(state.cdu_spec_array("pumps"), (n_frames, 1)).astype(np.int8),
    }
    return {
        "gpu": table("gpu", gpu_ids, g),
        "rack": table("rack", np.arange(state.n_racks), _rack_columns(state, m.node_power_w, gpu, gpu_ids)),
        "cdu": table("cdu", range(n_cdu), cdu),
        "loop": table("loop", range(n_loops), {"loop_supply_temp_c": nan(n_loops), "loop_return_temp_c": nan(n_loops)}),
        "site": _site_table(m.frame_ts, m.node_power_w),
        "events": events_table(events),
    }


def _rack_columns(
    state: SiteTables, node_power_w: np.ndarray, gpu: dict[str, np.ndarray], gpu_ids: np.ndarray
) -> dict[str, np.ndarray]:
    """The rack table's columns [frame, rack]: power from the nodes' readings, GPU statistics of the recorded GPUs."""
    n_frames = node_power_w.shape[0]

    def rack_stat(values: np.ndarray, fn) -> np.ndarray:
        out = np.full((n_frames, state.n_racks), np.nan)
        for r in np.unique(state.gpu_rack[gpu_ids]):
            cols = values[:, state.gpu_rack == r]
            with np.errstate(all="ignore"):
                ok = np.isfinite(cols).any(axis=1)
                out[ok, r] = fn(cols[ok], axis=1)
        return out

    node_rack_power = (
        np.stack(
            [np.bincount(state.node_rack, weights=np.nan_to_num(row), minlength=state.n_racks) for row in node_power_w]
        )
        / 1000.0
    )
    has_node = (
        np.stack(
            [np.bincount(state.node_rack, weights=np.isfinite(row), minlength=state.n_racks) for row in node_power_w]
        )
        > 0
    )
    return {
        "rack_power_kw": np.where(has_node, node_rack_power, np.nan),
        "rack_max_gpu_temp_c": rack_stat(gpu["gpu_temp_c"], np.nanmax),
        "rack_mean_gpu_temp_c": rack_stat(gpu["gpu_temp_c"], np.nanmean),
        "rack_mean_gpu_power_w": rack_stat(gpu["gpu_power_w"], np.nanmean),
        "rack_mean_util_frac": rack_stat(gpu["gpu_util_frac"], np.nanmean),
        "rack_mean_throttle_frac": rack_stat(gpu["throttle_frac"], np.nanmean),
        "rack_gpus_down_total": np.zeros((n_frames, state.n_racks), dtype=np.int16),
    }


def _site_table(frame_ts: pd.DatetimeIndex, node_power_w: np.ndarray) -> pa.Table:
    """The site table: IT power [MW] summed from the nodes' readings; what a series does not measure is NaN."""
    n_frames = len(frame_ts)
    ts = pa.array(frame_ts.as_unit("ms").tz_convert("UTC"), type=pa.timestamp("ms", tz="UTC"))
    it_mw = (
        np.where(np.isfinite(node_power_w).any(axis=1), np.nansum(node_power_w, axis=1) / 1e6, np.nan)
        if np.isfinite(node_power_w).any()
        else np.full(n_frames, np.nan)
    )
    empty_ids = pa.array([[]] * n_frames, type=pa.list_(pa.int32()))
    return pa.Table.from_arrays(
        [ts, pa.array(it_mw.astype(np.float32))]
        + [pa.array(np.full(n_frames, np.nan, dtype=np.float32)) for _ in range(6)]
        + [empty_ids] * 4,
        schema=SCHEMAS["site"],
    )
