"""Everything the floor's rack drill-down shows about one rack, as plain data.

Pure functions of (:class:`SiteTables`, :class:`Snapshot`, rack id): per-GPU grids
(node × GPU index) of temperature, power and clock, XID and health lists, the rack's
CDU, its power feeds up to the switchgear, and its fabric leaf switches with uplinks.
"""

from __future__ import annotations

import math

import numpy as np

from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED, Snapshot
from twin.site.tables import POWER_KINDS, TIER_LEAF, SiteTables

RACK_POWER_NOTE = "rack input power: all nodes' PSU input (GPUs, CPUs, memory, NICs, fans)"
NODE_POWER_NOTE = (
    "GPU power: the node's GPUs only (its PSU input, counted in rack input power, also feeds CPUs, memory, NICs, fans)"
)
GPU_STATE_NAMES = {0: "ok", GPU_THROTTLED: "throttled", GPU_DOWN: "down", GPU_OFF: "powered off"}


def rack_index(state: SiteTables, name: str | None) -> int | None:
    """Dense id of the rack called ``name`` (None when absent or unknown)."""
    if not name:
        return None
    try:
        return state.rack_name.index(name)
    except ValueError:
        return None


def rack_gpus(state: SiteTables, rack: int) -> tuple[np.ndarray, np.ndarray]:
    """(nodes of the rack by slot, GPU ids of the rack)."""
    nodes = np.flatnonzero(state.node_rack == rack)
    nodes = nodes[np.argsort(state.node_slot[nodes], kind="stable")]
    gpus = np.flatnonzero(state.gpu_rack == rack)
    return nodes, gpus


def gpu_grid(state: SiteTables, nodes: np.ndarray, gpus: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` of the rack's GPUs as a (node, GPU index) matrix; NaN where no GPU."""
    width = int(state.gpu_index[gpus].max()) + 1 if gpus.size else 1
    grid = np.full((nodes.size, width), np.nan)
    row_of_node = {int(n): i for i, n in enumerate(nodes)}
    rows = np.array([row_of_node[int(n)] for n in state.gpu_node[gpus]], dtype=np.int64)
    grid[rows, state.gpu_index[gpus]] = np.asarray(values, dtype=np.float64)[gpus]
    return grid


def node_rows(state: SiteTables, snapshot: Snapshot, nodes: np.ndarray, gpus: np.ndarray) -> list[dict]:
    """Per node of the rack: hostname, slot, max GPU temperature, GPU power and health counts."""
    rows = []
    for node in nodes:
        g = gpus[state.gpu_node[gpus] == node]
        temps = snapshot.gpu_temp_c[g]
        gpu_state = snapshot.gpu_state[g]
        rows.append(
            {
                "node": int(node),
                "name": state.node_name[node],
                "slot": int(state.node_slot[node]),
                "max_gpu_temp_c": float(np.nanmax(temps)) if np.isfinite(temps).any() else math.nan,
                "gpu_power_kw": float(np.nansum(snapshot.gpu_power_w[g]) / 1000.0),
                "gpus_throttled": int((gpu_state == GPU_THROTTLED).sum()),
                "gpus_down": int((gpu_state == GPU_DOWN).sum()),
            }
        )
    return rows


def gpu_events(state: SiteTables, snapshot: Snapshot, gpus: np.ndarray) -> list[dict]:
    """GPUs of the rack that are not OK or report an XID, worst first."""
    bad = gpus[np.isin(snapshot.gpu_state[gpus], (GPU_THROTTLED, GPU_DOWN)) | (snapshot.last_xid_code[gpus] != 0)]
    bad = bad[np.argsort(-snapshot.gpu_state[bad], kind="stable")]
    return [
        {
            "gpu": int(g),
            "node": state.node_name[state.gpu_node[g]],
            "index": int(state.gpu_index[g]),
            "state": GPU_STATE_NAMES.get(int(snapshot.gpu_state[g]), "?"),
            "xid": int(snapshot.last_xid_code[g]),
            "gpu_temp_c": float(snapshot.gpu_temp_c[g]),
            "throttle_frac": float(snapshot.throttle_frac[g]),
        }
        for g in bad
    ]


def cdu_info(state: SiteTables, snapshot: Snapshot, rack: int) -> dict:
    """The rack's CDU: pumps, flow, temperatures, heat and capacity, racks it serves."""
    cdu = int(state.rack_cdu[rack])
    spec = state.cdu_specs[state.cdu_spec[cdu]]
    supply, ret = float(snapshot.coolant_supply_temp_c[cdu]), float(snapshot.coolant_return_temp_c[cdu])
    heat, cap = float(snapshot.cdu_heat_kw[cdu]), float(snapshot.cdu_capacity_kw[cdu])
    lost = bool(snapshot.pumps_running_count[cdu] < spec.pumps_required)
    cap = 0.0 if lost else cap  # a CDU without enough pumps cools nothing
    return {
        "cdu": cdu,
        "name": state.cdu_name[cdu],
        "model": spec.name,
        "placement": spec.placement,
        "loop": state.loop_name[state.cdu_loop[cdu]],
        "pumps_running_count": int(snapshot.pumps_running_count[cdu]),
        "pumps": spec.pumps,
        "pumps_required": spec.pumps_required,
        "flow_lpm": float(snapshot.coolant_flow_lpm[cdu]),
        "design_flow_lpm": spec.design_flow_lpm,
        "supply_temp_c": supply,
        "return_temp_c": ret,
        "delta_t_k": ret - supply,
        "heat_kw": heat,
        "capacity_kw": cap,
        "headroom_kw": cap - heat,
        "racks_served": int((state.rack_cdu == cdu).sum()),
        "lost": lost,
    }


def feed_chains(state: SiteTables, snapshot: Snapshot, rack: int) -> list[dict]:
    """The rack's A and B feeds, each with its chain of elements up to the switchgear."""
    feeds = []
    for side, element in (("A", int(state.rack_feed_a[rack])), ("B", int(state.rack_feed_b[rack]))):
        if element < 0:
            continue
        chain = []
        node = element
        while node >= 0 and len(chain) < 16:
            chain.append(
                {
                    "element": node,
                    "name": state.power_name[node],
                    "kind": POWER_KINDS[int(state.power_kind[node])],
                    "load_kw": float(snapshot.feed_power_kw[node]),
                    "load_frac": float(snapshot.load_frac[node]),
                    "n1_load_frac": float(snapshot.power_n1_load_frac[node]),
                }
            )
            node = int(state.power_parent[node])
        feeds.append({"side": side, "chain": chain})
    return feeds


def fabric_links(state: SiteTables, snapshot: Snapshot, gpus: np.ndarray) -> list[dict]:
    """The leaf switches the rack's GPUs attach to, with their uplinks' state and load."""
    leaves = np.unique(state.gpu_leaf[gpus])
    rows = []
    for leaf in leaves:
        up = np.flatnonzero(state.link_a == leaf)
        rows.append(
            {
                "switch": int(leaf),
                "name": state.switch_name[leaf],
                "tier": "leaf" if state.switch_tier[leaf] == TIER_LEAF else str(int(state.switch_tier[leaf])),
                "gpus": int((state.gpu_leaf[gpus] == leaf).sum()),
                "uplinks": int(up.size),
                "uplinks_down": int((~snapshot.link_up_flag[up]).sum()),
                "uplink_gbps": float(state.link_gbps[up].sum()),
                "mean_util_frac": float(np.mean(snapshot.link_util_frac[up])) if up.size else math.nan,
                "max_util_frac": float(np.max(snapshot.link_util_frac[up])) if up.size else math.nan,
            }
        )
    return rows
