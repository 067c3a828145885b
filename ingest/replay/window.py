"""One recorded instant of a whole site (:class:`SiteFrame`) and the reduction of a window of them to bundle tables.

A :class:`SiteFrame` keeps everything the twin needs to re-run an instant and everything
an operator compares against: every GPU's readings (float16: the sensors' resolution —
integer °C, ~4 W power noise, 15 MHz clock bins — is far coarser than float16's), rack,
CDU, power, source and loop values, the site scalars and the failed equipment.

:func:`window_tables` turns a window of frames into the bundle's tables.  Full GPU detail
is kept only for the racks where something happened (throttling, a GPU down or reporting
an XID, a CDU short of pumps, the hottest racks), every rack keeps per-rack aggregates;
``docs/incidents.md`` lists what is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from ingest.replay.bundle import SCHEMAS
from ingest.store.layouts import GPU_FIELDS
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, Snapshot
from twin.site.tables import SiteTables

MAX_DETAIL_RACKS = 16  # 1,024 GPUs of full detail at 64 GPUs a rack


@dataclass
class SiteFrame:
    """A whole site at one instant (see module docstring).  Arrays are indexed by dense site ids."""

    ts: datetime
    gpu: np.ndarray  # float16 [len(GPU_FIELDS), n_gpus]
    gpu_state: np.ndarray  # int8 [n_gpus]
    rack_power_kw: np.ndarray  # float32 [n_racks]
    cdu: np.ndarray  # float32 [6, n_cdus] in CDU table order
    power: np.ndarray  # float32 [2, n_power]: feed_power_kw, load_frac
    source: np.ndarray  # float32 [2, n_sources]: source_power_mw, battery_soc_frac
    loop: np.ndarray  # float32 [2, n_loops]: supply, return temperature
    scalars: np.ndarray  # float32 [7]: it, facility MW, PUE, dry, wet bulb, job tokens/s, step time
    failed_power: np.ndarray  # int32 ids
    failed_sources: np.ndarray
    failed_links: np.ndarray
    nodes_off: np.ndarray

    ARRAYS = (
        "gpu",
        "gpu_state",
        "rack_power_kw",
        "cdu",
        "power",
        "source",
        "loop",
        "scalars",
        "failed_power",
        "failed_sources",
        "failed_links",
        "nodes_off",
    )

    def arrays(self) -> dict[str, np.ndarray]:
        out = {name: getattr(self, name) for name in self.ARRAYS}
        out["ts_ms"] = np.array([int(round(self.ts.timestamp() * 1000))], dtype=np.int64)
        return out

    @classmethod
    def from_arrays(cls, arrays) -> SiteFrame:
        ts = datetime.fromtimestamp(int(arrays["ts_ms"][0]) / 1000, tz=UTC)
        return cls(ts=ts, **{name: np.asarray(arrays[name]) for name in cls.ARRAYS})


def _ids(values) -> np.ndarray:
    return np.asarray(values if values is not None else [], dtype=np.int32).ravel()


def capture(
    ts: datetime, snap: Snapshot, *, failed_power=(), failed_sources=(), failed_links=None, nodes_off=None
) -> SiteFrame:
    """The :class:`SiteFrame` of ``snap`` with the equipment reported failed at ``ts``.

    ``failed_links`` defaults to the links the snapshot shows down; ``nodes_off`` is a bool
    mask per node (or None).
    """
    job = snap.jobs[0] if snap.jobs else None
    gpu = np.stack(
        [
            snap.gpu_temp_c,
            snap.hbm_temp_c,
            snap.gpu_power_w,
            snap.gpu_util_frac,
            snap.sm_clock_mhz,
            snap.throttle_frac,
            snap.last_xid_code,
        ]
    ).astype(np.float16)
    return SiteFrame(
        ts=ts,
        gpu=gpu,
        gpu_state=np.asarray(snap.gpu_state, dtype=np.int8),
        rack_power_kw=np.asarray(snap.rack_power_kw, dtype=np.float32),
        cdu=np.stack(
            [
                snap.coolant_supply_temp_c,
                snap.coolant_return_temp_c,
                snap.coolant_flow_lpm,
                snap.cdu_heat_kw,
                snap.cdu_capacity_kw,
                snap.pumps_running_count,
            ]
        ).astype(np.float32),
        power=np.stack([snap.feed_power_kw, snap.load_frac]).astype(np.float32),
        source=np.stack([snap.source_power_mw, snap.battery_soc_frac]).astype(np.float32),
        loop=np.stack([snap.loop_supply_temp_c, snap.loop_return_temp_c]).astype(np.float32),
        scalars=np.array(
            [
                snap.it_power_mw,
                snap.facility_power_mw,
                snap.pue_ratio,
                snap.outdoor_dry_bulb_c,
                snap.outdoor_wet_bulb_c,
                job.tokens_per_s if job else np.nan,
                job.step_time_s if job else np.nan,
            ],
            dtype=np.float32,
        ),
        failed_power=_ids(failed_power),
        failed_sources=_ids(failed_sources),
        failed_links=_ids(np.flatnonzero(~np.asarray(snap.link_up_flag)) if failed_links is None else failed_links),
        nodes_off=_ids(np.flatnonzero(nodes_off) if nodes_off is not None else []),
    )


def detail_racks(
    state: SiteTables, frames: list[SiteFrame], extra: list[int] = (), limit: int = MAX_DETAIL_RACKS
) -> np.ndarray:
    """Racks to keep at full GPU detail: ``extra`` first, then the most affected racks.

    A rack's score sums its GPUs' worst clock loss, its GPUs down or reporting XIDs, its
    CDU's missing pumps and its hottest GPU's rise over the window; the hottest rack is
    kept when nothing happened.
    """
    gpu = np.stack([f.gpu for f in frames]).astype(np.float32)  # [t, field, gpu]
    temp, throttle, xid = (gpu[:, GPU_FIELDS.index(k)] for k in ("gpu_temp_c", "throttle_frac", "last_xid_code"))
    gpu_state = np.stack([f.gpu_state for f in frames])
    down, off = gpu_state == GPU_DOWN, gpu_state == GPU_OFF
    per_rack = lambda v: np.bincount(state.gpu_rack, weights=v, minlength=state.n_racks)  # noqa: E731
    slowed = np.nan_to_num(np.nanmax(np.where(off, 0.0, 1.0 - throttle), axis=0))  # throttle_frac 1 = full speed
    score = per_rack(slowed) + per_rack((down.any(axis=0) | (np.nanmax(xid, axis=0) > 0)) * 10.0)
    pumps = np.stack([f.cdu[5] for f in frames])
    score += (pumps.max(axis=0) - pumps.min(axis=0))[state.rack_cdu] * 5.0
    rack_max = np.stack([_rack_max(state, t) for t in temp])
    rise = np.nanmax(rack_max, axis=0) - rack_max[0]
    score += np.clip(np.nan_to_num(rise) - 3.0, 0.0, None) / 10.0  # beyond sensor noise and workload swing
    chosen = [int(r) for r in extra]
    for r in np.argsort(-score, kind="stable"):
        if len(chosen) >= limit or score[r] <= 0:
            break
        if int(r) not in chosen:
            chosen.append(int(r))
    if not chosen:
        chosen = [int(np.nanargmax(np.nanmax(rack_max, axis=0)))]
    return np.array(sorted(chosen[: max(limit, len(extra))]), dtype=np.int32)


def _rack_max(state: SiteTables, values: np.ndarray) -> np.ndarray:
    out = np.full(state.n_racks, -np.inf)
    np.maximum.at(out, state.gpu_rack, np.where(np.isfinite(values), values, -np.inf))
    return np.where(np.isfinite(out), out, np.nan)


def _ts_column(frames: list[SiteFrame], repeat: int) -> pa.Array:
    ms = np.array([int(round(f.ts.timestamp() * 1000)) for f in frames], dtype=np.int64)
    return pa.array(np.repeat(ms, repeat).astype("datetime64[ms]"), type=pa.timestamp("ms", tz="UTC"))


def _long(name: str, frames: list[SiteFrame], ids: np.ndarray, columns: dict[str, np.ndarray]) -> pa.Table:
    """A long table (ts, id, values…) from per-frame arrays [n_frames, n_ids]."""
    schema = SCHEMAS[name]
    data = [_ts_column(frames, ids.size), pa.array(np.tile(ids.astype(np.int32), len(frames)))]
    for f in list(schema)[2:]:
        data.append(pa.array(np.asarray(columns[f.name]).reshape(-1).astype(f.type.to_pandas_dtype())))
    return pa.Table.from_arrays(data, schema=schema)


# CDU columns kept to 0.01 °C (facility sensors resolve ~0.1 K), 0.1 L/min and 0.01 kW
CDU_STEPS = {
    "coolant_supply_temp_c": 0.01,
    "coolant_return_temp_c": 0.01,
    "coolant_flow_lpm": 0.1,
    "cdu_heat_kw": 0.01,
    "cdu_capacity_kw": 0.01,
}


def _round(values: np.ndarray, step: float) -> np.ndarray:
    return np.round(values / step) * step


def _rack_columns(
    state: SiteTables, frames: list[SiteFrame], gpu: np.ndarray, state_t: np.ndarray
) -> dict[str, np.ndarray]:
    """The rack table's columns [frame, rack] of a window: ``gpu`` [frame, field, gpu], ``state_t`` [frame, gpu]."""
    live = state_t != GPU_OFF

    def rack_mean(values: np.ndarray) -> np.ndarray:  # over live GPUs with a value, per frame
        ok = live & np.isfinite(values)
        sums = np.stack(
            [
                np.bincount(state.gpu_rack, weights=np.where(o, v, 0.0), minlength=state.n_racks)
                for v, o in zip(values, ok)
            ]
        )
        cnt = np.stack([np.bincount(state.gpu_rack, weights=o, minlength=state.n_racks) for o in ok])
        return np.where(cnt > 0, sums / np.maximum(cnt, 1), np.nan)

    temp = gpu[:, GPU_FIELDS.index("gpu_temp_c")]
    return {
        "rack_power_kw": np.stack([f.rack_power_kw for f in frames]),
        "rack_max_gpu_temp_c": np.stack([_rack_max(state, t) for t in temp]),
        "rack_mean_gpu_temp_c": _round(rack_mean(temp), 0.01),
        "rack_mean_gpu_power_w": _round(rack_mean(gpu[:, GPU_FIELDS.index("gpu_power_w")]), 0.1),
        "rack_mean_util_frac": _round(rack_mean(gpu[:, GPU_FIELDS.index("gpu_util_frac")]), 1e-4),
        "rack_mean_throttle_frac": _round(rack_mean(gpu[:, GPU_FIELDS.index("throttle_frac")]), 1e-4),
        "rack_gpus_down_total": np.stack(
            [np.bincount(state.gpu_rack, weights=s == GPU_DOWN, minlength=state.n_racks) for s in state_t]
        ).astype(np.int16),
    }


def window_tables(state: SiteTables, frames: list[SiteFrame], detail: np.ndarray) -> dict[str, pa.Table]:
    """The bundle tables of a window of frames, with full GPU detail for the racks in ``detail``."""
    n = len(frames)
    gpu = np.stack([f.gpu for f in frames]).astype(np.float32)  # [t, field, gpu]
    state_t = np.stack([f.gpu_state for f in frames])
    gpu_ids = np.flatnonzero(np.isin(state.gpu_rack, detail)).astype(np.int32)
    g = {k: gpu[:, i][:, gpu_ids] for i, k in enumerate(GPU_FIELDS)}
    g["gpu_temp_c"], g["hbm_temp_c"] = _round(g["gpu_temp_c"], 0.1), _round(g["hbm_temp_c"], 0.1)
    g["gpu_power_w"], g["sm_clock_mhz"] = _round(g["gpu_power_w"], 0.5), np.round(g["sm_clock_mhz"])
    g["last_xid_code"] = np.nan_to_num(g["last_xid_code"]).astype(np.int16)
    racks = np.arange(state.n_racks, dtype=np.int32)
    rack = _rack_columns(state, frames, gpu, state_t)
    cdu = np.stack([f.cdu for f in frames])
    cdu_cols = {name: cdu[:, i] for i, name in enumerate(SCHEMAS["cdu"].names[2:])}
    cdu_cols["pumps_running_count"] = np.nan_to_num(cdu_cols["pumps_running_count"]).astype(np.int8)
    for name, step in CDU_STEPS.items():  # kept to a resolution finer than the sensors' (they compress far better)
        cdu_cols[name] = _round(cdu_cols[name], step)
    power, source, loop = (np.stack([getattr(f, k) for f in frames]) for k in ("power", "source", "loop"))
    scalars = np.stack([f.scalars for f in frames])
    site_schema = SCHEMAS["site"]
    site = pa.Table.from_arrays(
        [_ts_column(frames, 1)]
        + [pa.array(scalars[:, i].astype(np.float32)) for i in range(7)]
        + [
            pa.array([f.__dict__[k].tolist() for f in frames], type=pa.list_(pa.int32()))
            for k in ("failed_power", "failed_sources", "failed_links", "nodes_off")
        ],
        schema=site_schema,
    )
    return (
        {
            "gpu": _long("gpu", frames, gpu_ids, g),
            "rack": _long("rack", frames, racks, rack),
            "cdu": _long("cdu", frames, np.arange(state.n_cdus, dtype=np.int32), cdu_cols),
            "power": _long(
                "power",
                frames,
                np.arange(state.n_power, dtype=np.int32),
                {"feed_power_kw": power[:, 0], "load_frac": power[:, 1]},
            ),
            "source": _long(
                "source",
                frames,
                np.arange(state.n_sources, dtype=np.int32),
                {"source_power_mw": source[:, 0], "battery_soc_frac": source[:, 1]},
            ),
            "loop": _long(
                "loop",
                frames,
                np.arange(len(state.loop_name), dtype=np.int32),
                {"loop_supply_temp_c": loop[:, 0], "loop_return_temp_c": loop[:, 1]},
            ),
            "site": site,
        }
        if n
        else {}
    )
