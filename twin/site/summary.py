"""Counts and totals of a loaded site, as printed by ``clustertwin sites show``."""

from __future__ import annotations

from typing import Any

import numpy as np

from twin.site.tables import SOURCE_KINDS, TIER_CORE, TIER_LEAF, TIER_SPINE, SiteTables


def site_summary(state: SiteTables) -> dict[str, Any]:
    """Entity counts, rated power and generation of ``state`` (units in the keys)."""
    tdp_w = state.gpu_spec_array("tdp_w")
    node_full_w = np.bincount(state.gpu_node, weights=tdp_w, minlength=state.n_nodes) + state.node_base_power_w
    kinds = {k: int((state.source_kind == i).sum()) for i, k in enumerate(SOURCE_KINDS)}
    capacity = {
        f"{k}_mw": float(state.source_capacity_mw[state.source_kind == i].sum()) for i, k in enumerate(SOURCE_KINDS)
    }
    return {
        "name": state.name,
        "description": state.description,
        "n_halls": len(state.hall_name),
        "n_rows": len(state.row_name),
        "n_racks": state.n_racks,
        "n_nodes": state.n_nodes,
        "n_gpus": state.n_gpus,
        "gpu_types": sorted({s.name for s in state.gpu_specs}),
        "n_cdus": state.n_cdus,
        "n_cooling_loops": len(state.loop_name),
        "n_plants": len(state.plant_name),
        "n_switches": state.n_switches,
        "n_leaf_switches": int((state.switch_tier == TIER_LEAF).sum()),
        "n_spine_switches": int((state.switch_tier == TIER_SPINE).sum()),
        "n_core_switches": int((state.switch_tier == TIER_CORE).sum()),
        "n_links": state.n_links + state.n_gpus,  # switch-to-switch plus one NIC link per GPU
        "n_power_elements": state.n_power,
        "n_power_sources": state.n_sources,
        "n_power_sources_by_kind": kinds,
        "generation_capacity_mw": float(state.source_capacity_mw.sum()),
        "generation_capacity_by_kind_mw": capacity,
        "battery_energy_mwh": float(state.source_energy_mwh.sum()),
        "rated_it_power_mw": float(state.rack_rated_kw.sum() / 1000.0),
        "full_load_it_power_mw": float(node_full_w.sum() / 1e6),
        "gpu_tdp_total_mw": float(tdp_w.sum() / 1e6),
    }
