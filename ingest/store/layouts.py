"""The frame layouts of a site and the conversion of a twin snapshot into frames."""

from __future__ import annotations

import numpy as np

from ingest.store.frames import FrameLayout
from twin.engine.snapshot import Snapshot
from twin.site.tables import SiteTables

GPU_FIELDS = (
    "gpu_temp_c",
    "hbm_temp_c",
    "gpu_power_w",
    "gpu_util_frac",
    "sm_clock_mhz",
    "throttle_frac",
    "last_xid_code",
)
CDU_FIELDS = (
    "coolant_supply_temp_c",
    "coolant_return_temp_c",
    "coolant_flow_lpm",
    "cdu_heat_kw",
    "cdu_capacity_kw",
    "pumps_running_count",
)
RACK_FIELDS = ("rack_power_kw",)
POWER_FIELDS = ("feed_power_kw", "load_frac")
SOURCE_FIELDS = ("source_power_mw", "battery_soc_frac")
GPU_BLOCK = 512  # one array of 8 racks × 64 GPUs: a rack's GPUs never straddle two blocks


def site_layouts(state: SiteTables) -> list[FrameLayout]:
    """Layouts for every kind of frame the twin records for ``state``."""
    return [
        FrameLayout("gpu", GPU_FIELDS, state.n_gpus, GPU_BLOCK),
        FrameLayout("cdu", CDU_FIELDS, state.n_cdus, max(state.n_cdus, 1)),
        FrameLayout("rack", RACK_FIELDS, state.n_racks, max(state.n_racks, 1)),
        FrameLayout("power", POWER_FIELDS, state.n_power, max(state.n_power, 1)),
        FrameLayout("source", SOURCE_FIELDS, state.n_sources, max(state.n_sources, 1)),
    ]


def snapshot_frames(snap: Snapshot) -> dict[str, np.ndarray]:
    """The frames (kind → [n_fields, n_entities]) holding ``snap``'s per-entity values."""
    return {
        "gpu": np.stack(
            [
                snap.gpu_temp_c,
                snap.hbm_temp_c,
                snap.gpu_power_w,
                snap.gpu_util_frac,
                snap.sm_clock_mhz,
                snap.throttle_frac,
                snap.last_xid_code,
            ]
        ),
        "cdu": np.stack(
            [
                snap.coolant_supply_temp_c,
                snap.coolant_return_temp_c,
                snap.coolant_flow_lpm,
                snap.cdu_heat_kw,
                snap.cdu_capacity_kw,
                snap.pumps_running_count,
            ]
        ),
        "rack": snap.rack_power_kw[np.newaxis],
        "power": np.stack([snap.feed_power_kw, snap.load_frac]),
        "source": np.stack([snap.source_power_mw, snap.battery_soc_frac]),
    }
